/* SPDX-License-Identifier: ISC
 * Copyright (c) 2026 The uring-sftp-server developers.  See LICENSE. */
/* What the page cache holds of a file, asked without reading it
 * (cachestat(2), Linux 6.5 and later): a read-ahead hint for a window
 * already there is skipped (readahead.c). */
#ifndef PAGECACHE_H
#define PAGECACHE_H

#include <stddef.h>
#include <stdint.h>

/* Every page that [off, off + len) of fd touches is in the page cache:
 * 1; some are not: 0; that cannot be told (no cachestat): -1. */
int pagecache_holds(int fd, uint64_t off, uint64_t len);

/* The decision, pure (tests/check_readahead.c): are all pages of n bytes at
 * off cached, when the kernel counted cached of them? */
int pagecache_all_cached(uint64_t off, uint64_t n, uint64_t cached,
                         unsigned long page);

#endif
