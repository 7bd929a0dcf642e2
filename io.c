/* SPDX-License-Identifier: ISC
 * Copyright (c) 2026 The uring-sftp-server developers.  See LICENSE. */
/* Submitting and reaping operations: the back end's, and the worker
 * threads' (see io.h). */
#include "config.h"

#include "backend.h"
#include "io.h"
#include "latency.h"
#include "workers.h"

/* An operation the back end would run at submit time, in a worker. */
static void run_now_call(struct io_op *op)
{
	op->result = io_run_now(op);
}

int io_submit(struct io_op *op)
{
	if (op->opcode == IO_CALL)
		return workers_submit(op);
	if (backend->runs_at_submit == NULL || !backend->runs_at_submit(op))
		return backend->submit(op);
	/* On slow storage what would wait in the loop waits in a worker
	 * (latency.h); the op keeps its opcode for whoever reaps it.  Data
	 * calls are not timed: a write that waits on a local disk (the
	 * kernel throttling dirty pages) says nothing of round trips. */
	if (latency_storage_slow()) {
		op->call = run_now_call;
		return workers_submit(op);
	}
	return backend->submit(op);
}

int io_reap_ready(void)
{
	struct io_op *done[64];
	int i, n, total = 0;

	while ((n = workers_reap(done, 64)) > 0) {
		for (i = 0; i < n; i++)
			done[i]->done(done[i]);
		total += n;
	}
	while ((n = backend->reap(done, 64, 0)) > 0) {
		for (i = 0; i < n; i++)
			done[i]->done(done[i]);
		total += n;
	}
	return n < 0 ? n : total;
}

unsigned io_in_flight(void)
{
	return backend->in_flight() + workers_in_flight();
}

int io_completion_fd(int *ring_fd)
{
	*ring_fd = -1;
	if (backend->in_flight() > 0 &&
	    (*ring_fd = backend->completion_fd()) < 0)
		return -1;
	/* The workers' signal interrupts the sleep; one already sent (or
	 * a job run at once, in inline mode) means do not sleep. */
	if (workers_in_flight() > 0 && workers_ready())
		return -1;
	return 0;
}
