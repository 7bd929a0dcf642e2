/* SPDX-License-Identifier: ISC
 * Copyright (c) 2026 The uring-sftp-server developers.  See LICENSE. */
/* Is the storage slow just now?  On a local disk with a warm cache a
 * metadata call takes microseconds: handing it to a worker thread
 * (workers.h) would cost more than it saves, so it runs in the event
 * loop.  On network storage (NFS, FUSE gateways, cloud file systems) each
 * is a round trip of a millisecond or so, and run in the loop they would
 * serialise the session: then they go to the workers.
 *
 * Metadata calls are timed (a handler that looks up or changes paths or
 * handles, a READDIR's first lookup), wherever they run, into a moving
 * average (each call counts 1/8): the storage is slow while that average
 * is over LATENCY_SLOW_NS.  A run of round trips crosses it within four
 * calls of 1 ms; one call held up on a busy local disk does not.  Writes
 * are not timed: on a local disk one may wait while the kernel throttles
 * dirty pages, which says nothing of round trips. */
#ifndef LATENCY_H
#define LATENCY_H

#include <stdint.h>

#define LATENCY_SLOW_NS 400000

/* The decision, pure (tests/check_order.c): the moving average once a
 * call took took_ns. */
int64_t latency_average(int64_t average, int64_t took_ns);

/* A metadata call took took_ns (any thread). */
void latency_note(int64_t took_ns);
/* Should the next such call go to a worker thread? */
int latency_storage_slow(void);
/* Forget (a new session in a harness). */
void latency_reset(void);

#endif
