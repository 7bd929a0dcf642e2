/* SPDX-License-Identifier: ISC
 * Copyright (c) 2026 The uring-sftp-server developers.  See LICENSE. */
/* Where a request that may wait on the storage runs (doc/design.md,
 * "Requests that wait on storage"), and what to do with an io_uring
 * metadata call's answer: the decisions, pure (tests/check_order.c).
 * The queue (queue.c) and io.c act on them. */
#ifndef ROUTE_H
#define ROUTE_H

enum route {
	ROUTE_LOOP,   /* the whole handler in the event loop */
	ROUTE_WORKER, /* the whole handler in a worker thread (offload) */
	ROUTE_RING,   /* the handler in the loop, its one call in the ring */
};

/* offloadable: a worker may run its handler (request_offloadable);
 * slow: the storage is slow (latency.h); ring_op: its one system call
 * has an io_uring operation this kernel runs, and it may be made as one
 * (request_ring_op, io_ring_has). */
enum route route_request(int offloadable, int slow, int ring_op);

enum ring_answer {
	RING_FINAL, /* the call's answer */
	RING_AGAIN, /* not an answer (EAGAIN, EINTR, ECANCELED): make the call
	             * again, in a worker */
	RING_CHECK, /* EINVAL or EOPNOTSUPP, maybe io_uring's refusal of the
	             * operation: make the call in a worker, whose answer
	             * counts, and compare (ring_refused) */
};

/* What a metadata call's completion (result: 0 or more, or -errno) is.
 * A close is final whatever it says, once it ran: the descriptor is gone
 * then, as with close(2), and a second close could close another file
 * that took its number; only a close cancelled before it ran
 * (-ECANCELED) is made again. */
enum ring_answer ring_answer(int is_close, long result);

/* After RING_CHECK: did io_uring refuse the operation (the plain call's
 * answer differs from its own)?  Then it is not used again. */
int ring_refused(long ring_result, long plain_result);

#endif
