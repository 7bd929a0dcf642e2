/* SPDX-License-Identifier: ISC
 * Copyright (c) 2026 The uring-sftp-server developers.  See LICENSE. */
/* Timing calls that may wait on the storage: see latency.h. */
#include "config.h"

#include "latency.h"

/* Written by the loop and the workers; a lost update only makes one
 * call run where the other would have put it. */
static int64_t average_ns;

int64_t latency_average(int64_t average, int64_t took_ns)
{
	return average + (took_ns - average) / 8;
}

void latency_note(int64_t took_ns)
{
	int64_t avg = __atomic_load_n(&average_ns, __ATOMIC_RELAXED);

	__atomic_store_n(&average_ns, latency_average(avg, took_ns),
	                 __ATOMIC_RELAXED);
}

int latency_storage_slow(void)
{
	return __atomic_load_n(&average_ns, __ATOMIC_RELAXED) > LATENCY_SLOW_NS;
}

void latency_reset(void)
{
	__atomic_store_n(&average_ns, 0, __ATOMIC_RELAXED);
}
