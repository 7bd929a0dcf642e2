/* SPDX-License-Identifier: ISC
 * Copyright (c) 2026 The uring-sftp-server developers.  See LICENSE. */
/* Read-ahead for sequential READ streams.  The client may keep only a few
 * requests in flight; without help a cold file is then read from disk at
 * that depth.  We ask the kernel to start reading the next window into the
 * page cache (posix_fadvise WILLNEED, through the back end: io_uring runs
 * it in a worker so the loop does not wait for it; the plain back end
 * calls it inline, which may wait on reading metadata), so READs stay
 * coherent with other
 * writers: nothing is cached privately, every READ reads the page cache
 * when it runs. */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "backend.h"
#include "handle.h"
#include "readahead.h"

/* How far ahead of a sequential stream the kernel is asked to read, and
 * how much of that may be consumed before asking again. */
#define READAHEAD_WINDOW (16 * 256 * 1024)
#define READAHEAD_REFILL (READAHEAD_WINDOW / 2)

/* Hints in flight at once (the back end keeps slots for them apart from
 * the requests'); when all are busy a hint is skipped. */
#define READAHEAD_OPS BACKEND_HINT_SLOTS

static struct io_op hint_ops[READAHEAD_OPS];
static int hint_busy[READAHEAD_OPS];

/* What the page cache holds of a file, asked without reading it:
 * cachestat(2), Linux 6.5 and later.  It has the same number on every
 * architecture; Debian 12's headers predate it. */
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

static int cachestat_unavailable; /* ENOSYS (an older kernel), or EPERM */

int readahead_all_cached(uint64_t off, uint64_t n, uint64_t cached,
                         unsigned long page)
{
	uint64_t first = off / page, end = (off + n + page - 1) / page;

	return n == 0 || cached >= end - first;
}

/* Every page that [off, off + len) of fd touches is in the page cache:
 * 1; some are not: 0; that cannot be told (no cachestat): -1. */
static int page_cache_holds(int fd, uint64_t off, uint64_t len)
{
	static long page;
	struct cachestat_range range;
	struct cachestat cs;

	if (cachestat_unavailable)
		return -1;
	if (page == 0 && (page = sysconf(_SC_PAGESIZE)) <= 0)
		page = 4096;
	/* Whole pages: cachestat counts the pages the range touches. */
	range.off = off - off % (uint64_t)page;
	range.len = off + len - range.off;
	if (syscall(__NR_cachestat, fd, &range, &cs, 0) == -1) {
		if (errno == ENOSYS || errno == EPERM)
			cachestat_unavailable = 1;
		return -1;
	}
	return readahead_all_cached(off, len, cs.nr_cache, (unsigned long)page);
}

static void hint_done(struct io_op *op)
{
	close(op->fd);
	hint_busy[op - hint_ops] = 0;
}

static void hint(int fd, uint64_t from, uint64_t len)
{
	struct io_op *op;
	int i;

	/* Every page in the page cache already: a hint would only make a
	 * worker thread walk those pages for nothing (a warm download spent
	 * a tenth of its CPU so); one system call here, in the loop, costs
	 * far less.  A window reaching past the end of the file counts as
	 * not cached: near the end there is one hint more. */
	if (page_cache_holds(fd, from, len) == 1)
		return;
	for (i = 0; i < READAHEAD_OPS && hint_busy[i]; i++)
		;
	if (i == READAHEAD_OPS)
		return;
	op = &hint_ops[i];
	op->opcode = IO_READAHEAD;
	/* A descriptor of its own: the handle may be closed while the hint
	 * waits (CLOSE does not wait for hints), and its number reused for
	 * another file. */
	if ((op->fd = fcntl(fd, F_DUPFD_CLOEXEC, 0)) == -1)
		return;
	op->offset = from;
	op->len = (size_t)len;
	op->done = hint_done;
	op->owner = NULL;
	/* A hint: if the back end is full, there is simply none. */
	if (backend->submit(op) == 0)
		hint_busy[i] = 1;
	else
		close(op->fd);
}

void readahead_on_open(struct handle *h)
{
	/* Doubles the kernel's own read-ahead for this file. */
	(void)posix_fadvise(h->fd, 0, 0, POSIX_FADV_SEQUENTIAL);
	h->next_read = 0;
	h->ahead_until = 0;
}

void readahead_advance(int fd, uint64_t *next_read, uint64_t *ahead_until,
                       uint64_t off, uint64_t len)
{
	uint64_t end = off + len, from;

	if (off != *next_read) {
		/* A seek: start over from here, with no hint until the stream
		 * proves sequential again. */
		*next_read = end;
		*ahead_until = end;
		return;
	}
	*next_read = end;
	if (*ahead_until >= end + READAHEAD_REFILL)
		return;
	from = *ahead_until > end ? *ahead_until : end;
	*ahead_until = end + READAHEAD_WINDOW;
	hint(fd, from, *ahead_until - from);
}

void readahead_on_read(struct handle *h, uint64_t off, uint32_t len)
{
	readahead_advance(h->fd, &h->next_read, &h->ahead_until, off, len);
}
