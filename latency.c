/* SPDX-License-Identifier: ISC
 * Copyright (c) 2026 The uring-sftp-server developers.  See LICENSE. */
/* Timing calls that may wait on the storage: see latency.h. */
#include "config.h"

#include "latency.h"
#include "monotonic.h"

/* Written by the loop and the workers; a lost update only makes one
 * call run where the other would have put it. */
static int64_t slow_until;

int64_t latency_slow_until(int64_t took_ns, int64_t now, int64_t until)
{
	if (took_ns > LATENCY_SLOW_NS && now + LATENCY_HOLD_NS > until)
		return now + LATENCY_HOLD_NS;
	return until;
}

void latency_note(int64_t took_ns)
{
	int64_t until = __atomic_load_n(&slow_until, __ATOMIC_RELAXED),
	        next = latency_slow_until(took_ns, monotonic_ns(), until);

	if (next != until)
		__atomic_store_n(&slow_until, next, __ATOMIC_RELAXED);
}

int latency_storage_slow(void)
{
	return monotonic_ns() < __atomic_load_n(&slow_until, __ATOMIC_RELAXED);
}

void latency_reset(void)
{
	__atomic_store_n(&slow_until, 0, __ATOMIC_RELAXED);
}
