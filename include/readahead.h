/* SPDX-License-Identifier: ISC
 * Copyright (c) 2026 The uring-sftp-server developers.  See LICENSE. */
/* Kernel read-ahead hints for sequential READ streams on a handle; a
 * window the page cache holds already (cachestat(2)) gets none. */
#ifndef READAHEAD_H
#define READAHEAD_H

#include <stdint.h>

struct handle;

void readahead_on_open(struct handle *h);
void readahead_on_read(struct handle *h, uint64_t off, uint32_t len);
/* The same for any sequential reader of fd that keeps its own position
 * (check-file): a read of [off, off + len) was just submitted. */
void readahead_advance(int fd, uint64_t *next_read, uint64_t *ahead_until,
                       uint64_t off, uint64_t len);

/* The decision, pure (tests/check_readahead.c): are all pages of n bytes at
 * off cached, when the kernel counted cached of them? */
int readahead_all_cached(uint64_t off, uint64_t n, uint64_t cached,
                         unsigned long page);

#endif
