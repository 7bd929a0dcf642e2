/* SPDX-License-Identifier: ISC
 * Copyright (c) 2026 The uring-sftp-server developers.  See LICENSE. */
/* Pacing writes into a pipe stdout; see outpace.h for why. */
#include "config.h"

#include "outpace.h"

int64_t outpace_pause_left(const struct outpace *p, int64_t now_ns)
{
	if (p->pause_until != 0 && now_ns < p->pause_until)
		return p->pause_until - now_ns;
	return 0;
}

int64_t outpace_wait(struct outpace *p, uint64_t written, uint64_t unread,
                     int64_t now_ns)
{
	uint64_t consumed = unread < written ? written - unread : 0,
	         low = p->capacity / 4;
	int64_t gap = now_ns - p->last_ns;
	double sample, wait;

	if (p->capacity == 0)
		return 0;
	/* Woken early (a completion, input): the pause goes on, it does not
	 * start over, or steady completions would postpone it for ever. */
	if (outpace_pause_left(p, now_ns) > 0)
		return outpace_pause_left(p, now_ns);
	p->pause_until = 0;
	if (p->last_ns == 0 || gap <= 0 || gap > OUTPACE_STALE_NS ||
	    consumed < p->last_consumed) {
		p->rate = 0;
	} else {
		sample = (double)(consumed - p->last_consumed) / (double)gap;
		/* Smoothed, so that one burst or pause of the reader does not
		 * set the pace alone. */
		p->rate = p->rate == 0 ? sample : (p->rate + sample) / 2;
	}
	p->last_consumed = consumed;
	p->last_ns = now_ns;
	if (p->rate == 0 || unread <= low)
		return 0;
	wait = (double)(unread - low) / p->rate;
	if (wait < 1 || wait > OUTPACE_MAX_WAIT_NS)
		return 0;
	p->pause_until = now_ns + (int64_t)wait;
	return (int64_t)wait;
}

int outpace_woke(struct outpace *p, uint64_t unread, int64_t now_ns)
{
	if (outpace_pause_left(p, now_ns) > 0)
		return 0;
	p->pause_until = 0;
	/* The next pauses are shorter; samples set the rate right again. */
	if (unread < p->capacity / 8)
		p->rate *= 2;
	return 1;
}
