/* SPDX-License-Identifier: ISC
 * Copyright (c) 2026 The uring-sftp-server developers.  See LICENSE. */
/* What the page cache holds of a file, asked without reading it
 * (cachestat(2), Linux 6.5 and later).  A READ whose bytes are all there
 * can be spliced from the file straight into stdout when its turn comes:
 * no pipe of ours, no wait on the disk in the loop; one whose bytes are
 * not may be copied rather than wait for a pipe (pipes.h); a read-ahead
 * hint for a window already there is skipped. */
#ifndef PAGECACHE_H
#define PAGECACHE_H

#include <stddef.h>
#include <stdint.h>

/* Every page that [off, off + len) of fd touches is in the page cache:
 * 1; some are not: 0; that cannot be told (no cachestat): -1. */
int pagecache_holds(int fd, uint64_t off, uint64_t len);

/* The bytes of [off, off + len) that fd, a regular file of size bytes,
 * holds (0 at or past the end), when every page of them is in the page
 * cache; PAGECACHE_MISS when some are not; PAGECACHE_UNKNOWN when that
 * cannot be told. */
#define PAGECACHE_MISS (-1)
#define PAGECACHE_UNKNOWN (-2)
int64_t pagecache_resident(int fd, uint64_t size, uint64_t off, size_t len);

/* The decision, pure (tests/check_pipes.c): are all pages of n bytes at
 * off cached, when the kernel counted cached of them? */
int pagecache_all_cached(uint64_t off, uint64_t n, uint64_t cached,
                         unsigned long page);

#endif
