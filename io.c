/* SPDX-License-Identifier: ISC
 * Copyright (c) 2026 The uring-sftp-server developers.  See LICENSE. */
/* Submitting and reaping operations: the back end's, and the worker
 * threads' (see io.h). */
#include "config.h"

#include <stdint.h>

#include "backend.h"
#include "io.h"
#include "latency.h"
#include "monotonic.h"
#include "workers.h"

/* An operation the back end would run at submit time, in a worker. */
static void run_now_call(struct io_op *op)
{
	int64_t t0 = monotonic_ns();

	op->result = io_run_now(op);
	latency_note(monotonic_ns() - t0);
}

int io_submit(struct io_op *op)
{
	int64_t t0;
	int rc;

	if (op->opcode == IO_CALL)
		return workers_submit(op);
	if (backend->runs_at_submit == NULL || !backend->runs_at_submit(op))
		return backend->submit(op);
	/* On slow storage what would wait in the loop waits in a worker
	 * (latency.h); the op keeps its opcode for whoever reaps it. */
	if (latency_storage_slow()) {
		op->call = run_now_call;
		return workers_submit(op);
	}
	t0 = monotonic_ns();
	rc = backend->submit(op);
	latency_note(monotonic_ns() - t0);
	return rc;
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
