/* SPDX-License-Identifier: ISC
 * Copyright (c) 2026 The uring-sftp-server developers.  See LICENSE. */
/* Is the storage slow just now?  On a local disk with a warm cache a
 * metadata call or a write takes microseconds: handing it to a worker
 * thread (workers.h) would cost more than it saves, so it runs in the
 * event loop.  On network storage (NFS, FUSE gateways, cloud file
 * systems) each is a round trip of a millisecond or more, and run in the
 * loop they would serialise the session: then they go to the workers.
 * Metadata calls are timed (a handler that looks up or changes paths or
 * handles, a READDIR's first lookup: on network storage each is a round
 * trip); one slower than LATENCY_SLOW_NS marks the storage slow for
 * LATENCY_HOLD_NS, during which metadata, writes and the plain back end's
 * I/O go to the workers; then calls run in the loop again until one is
 * slow.  So a session on slow storage blocks its loop on at most one
 * metadata call a second.  Writes are not timed: on a local disk one may
 * wait while the kernel throttles dirty pages, which says nothing of round
 * trips (and run in order in a worker they would only add a hand-off). */
#ifndef LATENCY_H
#define LATENCY_H

#include <stdint.h>

#define LATENCY_SLOW_NS 200000
#define LATENCY_HOLD_NS 1000000000

/* The decision, pure (tests/check_order.c): the new end of the slow
 * period once a call took took_ns at now. */
int64_t latency_slow_until(int64_t took_ns, int64_t now, int64_t slow_until);

/* A call that may wait on the storage took took_ns (any thread). */
void latency_note(int64_t took_ns);
/* Should the next such call go to a worker thread? */
int latency_storage_slow(void);
/* Forget (a new session in a harness). */
void latency_reset(void);

#endif
