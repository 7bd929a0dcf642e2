/* SPDX-License-Identifier: ISC
 * Copyright (c) 2026 The uring-sftp-server developers.  See LICENSE. */
/* Where requests run: see route.h. */
#include "config.h"

#include <errno.h>

#include "route.h"

enum route route_request(int offloadable, int slow, int ring_op)
{
	/* On fast storage a hand-off costs more than the call. */
	if (!offloadable || !slow)
		return ROUTE_LOOP;
	return ring_op ? ROUTE_RING : ROUTE_WORKER;
}

enum ring_answer ring_answer(int is_close, long result)
{
	/* A close cancelled before it ran (io-wq could not start a thread:
	 * RLIMIT_NPROC, a pids cgroup) left the descriptor open: made again.
	 * Any other answer of a close is final. */
	if (is_close)
		return result == -ECANCELED ? RING_AGAIN : RING_FINAL;
	switch (result) {
	case -EAGAIN:
	case -EINTR:
	case -ECANCELED:
		return RING_AGAIN;
	case -EINVAL:
	case -EOPNOTSUPP:
		return RING_CHECK;
	default:
		return RING_FINAL;
	}
}

int ring_refused(long ring_result, long plain_result)
{
	return ring_result != plain_result;
}
