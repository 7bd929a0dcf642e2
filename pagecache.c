/* SPDX-License-Identifier: ISC
 * Copyright (c) 2026 The uring-sftp-server developers.  See LICENSE. */
/* Page-cache residency of a file range: see pagecache.h. */
#include "config.h"

#include <errno.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "pagecache.h"

/* cachestat(2) has the same number on every architecture; Debian 12's
 * headers predate it. */
#ifndef __NR_cachestat
#define __NR_cachestat 451
#endif

struct cachestat_range {
	uint64_t off;
	uint64_t len;
};

struct cachestat {
	uint64_t nr_cache;
	uint64_t nr_dirty;
	uint64_t nr_writeback;
	uint64_t nr_evicted;
	uint64_t nr_recently_evicted;
};

static int unavailable; /* ENOSYS (an older kernel), or a filter's EPERM */

int pagecache_all_cached(uint64_t off, uint64_t n, uint64_t cached,
                         unsigned long page)
{
	uint64_t first = off / page, end = (off + n + page - 1) / page;

	return n == 0 || cached >= end - first;
}

int pagecache_holds(int fd, uint64_t off, uint64_t len)
{
	static long page;
	struct cachestat_range range;
	struct cachestat cs;

	if (unavailable)
		return -1;
	if (page == 0 && (page = sysconf(_SC_PAGESIZE)) <= 0)
		page = 4096;
	/* Whole pages: cachestat counts the pages the range touches. */
	range.off = off - off % (uint64_t)page;
	range.len = off + len - range.off;
	if (syscall(__NR_cachestat, fd, &range, &cs, 0) == -1) {
		if (errno == ENOSYS || errno == EPERM)
			unavailable = 1;
		return -1;
	}
	return pagecache_all_cached(off, len, cs.nr_cache, (unsigned long)page);
}
