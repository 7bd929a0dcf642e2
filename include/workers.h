/* SPDX-License-Identifier: ISC
 * Copyright (c) 2026 The uring-sftp-server developers.  See LICENSE. */
/* A small pool of threads for work that may wait on storage and has no
 * io_uring operation of its own, or any work with the plain back end:
 * metadata requests (stat, open, mkdir, rename, ...) and the stats of a
 * READDIR's entries.  On network storage each such call is a round trip;
 * run one after another in the event loop they would serialise the whole
 * session (doc/design.md, "Requests that wait on storage").
 *
 * A job is an io_op of opcode IO_CALL: op->call(op) runs in a worker and
 * sets op->result; the event loop reaps it like any other completion and
 * calls op->done.  Threads are started as jobs need them, up to
 * WORKERS_MAX, and kept for the session. */
#ifndef WORKERS_H
#define WORKERS_H

#include "backend.h"

#define WORKERS_MAX 16

/* Queue op (IO_CALL) for a worker: 0, or -errno (no thread could be
 * started and none runs). */
int workers_submit(struct io_op *op);
/* Run fn(arg) in a worker when one is free, with nothing to reap after
 * (help for a job already running: see readdir's entry stats).  0, or
 * -errno. */
int workers_help(void (*fn)(void *arg), void *arg);
/* Threads idle now (a job queued would start at once). */
unsigned workers_idle(void);
/* Jobs tell the loop they finished by sending signo to the calling
 * thread, the loop's: it must be blocked there but while the loop sleeps
 * (ppoll with it unblocked), and have a handler (one that does nothing
 * will do).  No descriptor: the client's handles may use every one the
 * limit allows, as with OpenSSH's server.  0, or -errno. */
int workers_init(int signo);
/* Finished jobs wait to be reaped (the loop must not sleep). */
int workers_ready(void);
/* Move up to max finished jobs into done[]: how many. */
int workers_reap(struct io_op **done, int max);
/* Jobs submitted and not yet reaped. */
unsigned workers_in_flight(void);
/* Run every job at once in the caller's thread instead (the fuzzer and
 * unit tests, which want one thread and a reproducible order). */
void workers_run_inline(int on);

#endif
