/* SPDX-License-Identifier: ISC
 * Copyright (c) 2026 The uring-sftp-server developers.  See LICENSE. */
/* Operations go to the back end or to the worker threads (workers.h):
 * IO_CALL always to a worker; what the back end would run at submit time,
 * in the event loop (writes; everything with the plain back end), to a
 * worker too while the storage is slow (latency.h).  Completions of both
 * are reaped together. */
#ifndef IO_H
#define IO_H

#include "backend.h"

/* Submit op: IO_CALL to a worker thread (workers.h); a metadata call
 * (io_is_meta) to the ring when io_ring_has it, else to a worker; anything
 * else to the back end.  0 or -errno (-EBUSY: the back end is full).
 *
 * A metadata call's completion from the ring that is no answer (route.h,
 * ring_answer: EAGAIN, EINTR, ECANCELED; EINVAL and EOPNOTSUPP, which may
 * be io_uring refusing the operation) is not passed on: a worker makes
 * the call again and its answer is.  Where the two differ, io_uring
 * refused the operation: it is not used again (logged once, at VERBOSE).
 * This check is io.c's own done callback, which then calls the owner's,
 * so it holds whoever reaps the completion (io_reap_ready, io_sync).
 * Metadata calls but close are timed from submission to answer
 * (latency.h). */
int io_submit(struct io_op *op);
/* Does the back end run this metadata opcode itself (io_uring, and not
 * refused at run time)? */
int io_ring_has(int opcode);
/* Reap what has finished (without waiting) and call each done callback.
 * Returns the number reaped, or -errno. */
int io_reap_ready(void);
/* Operations submitted and not yet reaped, back end and workers. */
unsigned io_in_flight(void);
/* What to poll for completions while some are in flight: the back end's
 * descriptor (-1: none); the workers wake the sleep with a signal
 * (workers.h).  -1 when the caller must not sleep: completions are
 * ready, or submissions wait to be handed over (flush first). */
int io_completion_fd(int *ring_fd);

#endif
