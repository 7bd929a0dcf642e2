/* SPDX-License-Identifier: ISC
 * Copyright (c) 2026 The uring-sftp-server developers.  See LICENSE. */
/* The monotonic clock in nanoseconds: what the loop's decisions are
 * given as "now", and what the storage-latency check times calls by. */
#ifndef MONOTONIC_H
#define MONOTONIC_H

#include <stdint.h>
#include <time.h>

static inline int64_t monotonic_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

#endif
