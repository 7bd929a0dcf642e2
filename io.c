/* SPDX-License-Identifier: ISC
 * Copyright (c) 2026 The uring-sftp-server developers.  See LICENSE. */
/* Submitting and reaping operations: the back end's, and the worker
 * threads' (see io.h). */
#include "config.h"

#include <stddef.h>
#include <string.h>

#include "backend.h"
#include "io.h"
#include "latency.h"
#include "log.h"
#include "monotonic.h"
#include "route.h"
#include "workers.h"

/* Metadata opcodes the kernel refused at run time (ring_refused). */
static unsigned char refused[IO_OPCODES];

static const char *const meta_names[IO_OPCODES] = {
    [IO_STATX] = "STATX",     [IO_UNLINKAT] = "UNLINKAT",
    [IO_MKDIRAT] = "MKDIRAT", [IO_SYMLINKAT] = "SYMLINKAT",
    [IO_LINKAT] = "LINKAT",   [IO_RENAMEAT] = "RENAMEAT",
    [IO_CLOSE] = "CLOSE",
};

/* An operation the back end would run at submit time, in a worker. */
static void run_now_call(struct io_op *op)
{
	op->result = io_run_now(op);
}

int io_ring_has(int opcode)
{
	return io_is_meta(opcode) && !refused[opcode] && backend->has != NULL &&
	       backend->has(opcode);
}

/* A metadata call answered: was the ring's refusal io_uring's own (then
 * its opcode is not used again: logged once)?  Timed, but for a close
 * (latency.h: what says how slow the storage is). */
static void meta_answered(struct io_op *op)
{
	if (op->ring_result < 0 && ring_refused(op->ring_result, op->result) &&
	    !refused[op->opcode]) {
		refused[op->opcode] = 1;
		verbose("io_uring refused IORING_OP_%s (%s): the workers make "
		        "those calls",
		        meta_names[op->opcode],
		        errno_text((int)-op->ring_result));
	}
	if (op->opcode != IO_CLOSE)
		latency_note(monotonic_ns() - op->submitted_ns);
}

/* Every metadata call's completion comes here first, whoever reaps it
 * (io_reap_ready, io_sync): one from the ring that is no answer is given
 * to a worker to make again (route.h), an answer goes on to the owner's
 * done. */
static void meta_done(struct io_op *op)
{
	enum ring_answer a =
	    op->meta_in_worker
	        ? RING_FINAL
	        : ring_answer(op->opcode == IO_CLOSE, (long)op->result);

	if (a != RING_FINAL) {
		/* Compared in meta_answered; 1: nothing to compare. */
		op->ring_result = a == RING_CHECK ? op->result : 1;
		op->meta_in_worker = 1;
		op->call = run_now_call;
		if (workers_submit(op) == 0)
			return;
	}
	meta_answered(op);
	op->done = op->meta_then;
	op->done(op);
}

static int submit_meta(struct io_op *op)
{
	int rc;

	op->submitted_ns = monotonic_ns();
	op->ring_result = 0;
	op->meta_then = op->done;
	op->done = meta_done;
	op->meta_in_worker = !io_ring_has(op->opcode);
	if (!op->meta_in_worker) {
		/* A close names its descriptor: tests/leaks.sh matches it
		 * with those valgrind, which cannot see io_uring's closes,
		 * reports open at exit. */
		if (op->opcode == IO_CLOSE)
			debug3("io_uring: CLOSE %d", op->fd);
		else
			debug3("io_uring: %s", meta_names[op->opcode]);
		rc = backend->submit(op);
	} else {
		op->call = run_now_call;
		rc = workers_submit(op);
	}
	/* Not submitted (-EBUSY: the queue submits the same op again):
	 * unwrapped, or meta_done would be its own "then". */
	if (rc < 0)
		op->done = op->meta_then;
	return rc;
}

int io_submit(struct io_op *op)
{
	if (op->opcode == IO_CALL)
		return workers_submit(op);
	if (io_is_meta(op->opcode))
		return submit_meta(op);
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
