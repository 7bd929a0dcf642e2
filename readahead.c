/* SPDX-License-Identifier: ISC
 * Copyright (c) 2026 The uring-sftp-server developers.  See LICENSE. */
/* Read-ahead hints: the device's queue depth without READ memory.  A READ
 * holds READ memory only while it runs (readmem.h), so the READs in flight
 * are few (six of 255 KiB), however many the client has sent; and the
 * client itself may keep only a few in flight.  Either way a cold file
 * would be read from disk at that depth.  So the kernel is asked to start
 * reading into the page cache what the READs will want (posix_fadvise
 * WILLNEED, through the back end: io_uring runs it in a worker so the loop
 * does not wait for it; the plain back end calls it inline, which may wait
 * on reading metadata):
 *   - for a sequential stream, a window beyond the READ that runs;
 *   - for the READs of a stream the client sent that wait for READ
 *     memory (the queue asks, readahead_queued), their ranges at once,
 *     so the device sees the client's whole depth.
 * READs stay coherent with other writers: nothing is cached privately,
 * every READ reads the page cache when it runs. */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <unistd.h>

#include "backend.h"
#include "handle.h"
#include "readahead.h"

/* How far ahead of a sequential stream the kernel is asked to read, and
 * how much of that may be consumed before asking again. */
#define READAHEAD_WINDOW (16 * 256 * 1024)
#define READAHEAD_REFILL (READAHEAD_WINDOW / 2)
/* How far ahead of a stream's position the READs waiting for READ memory
 * are hinted at most (the client's queue: 64 READs of 255 KiB is less). */
#define READAHEAD_QUEUED_MAX (32 * 1024 * 1024)
/* ...in steps of at least this much: a hint per READ that arrives would
 * cost a worker's turn each, and where cachestat(2) cannot tell what is
 * cached (a file the user cannot write: EPERM), each would walk cached
 * pages (warm downloads of another user's file ran 0.7 times as fast). */
#define READAHEAD_QUEUED_STEP READAHEAD_REFILL

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

/* No cachestat on this kernel (ENOSYS): then no file has it.  Any other
 * refusal is the file's own (its reader's struct residency): EPERM says only
 * that this user may not write this file, nothing of the next. */
static int cachestat_missing;

int readahead_all_cached(uint64_t off, uint64_t n, uint64_t cached,
                         unsigned long page)
{
	uint64_t first = off / page, end = (off + n + page - 1) / page;

	return n == 0 || cached >= end - first;
}

enum residency_way readahead_first_way(unsigned long fs_type)
{
	return fs_type == 0x794c7630 /* overlayfs */ ? RESIDENCY_NOWAIT
	                                             : RESIDENCY_CACHESTAT;
}

enum residency_way readahead_residency_after(int err, int *all_files)
{
	*all_files = err == ENOSYS;
	return RESIDENCY_NOWAIT;
}

unsigned readahead_samples(uint64_t off, uint64_t len, unsigned long page,
                           uint64_t at[READAHEAD_SAMPLES])
{
	uint64_t first, last, gap;
	unsigned n, i;

	if (len == 0 || off > UINT64_MAX - len)
		return 0;
	first = off / page;
	last = (off + len - 1) / page;
	/* One a READAHEAD_SAMPLE_GAP at most, the first and last pages
	 * always: a window that ends past what is cached shows at its end,
	 * one that starts past it at its start. */
	n = (unsigned)((last - first) * page / READAHEAD_SAMPLE_GAP) + 2;
	if (n > READAHEAD_SAMPLES)
		n = READAHEAD_SAMPLES;
	if (last == first)
		n = 1;
	gap = n > 1 ? (last - first) / (n - 1) : 0;
	for (i = 0; i < n; i++)
		at[i] = (i + 1 == n ? last : first + i * gap) * page;
	return n;
}

/* cachestat(2) of the pages [off, off + len) of fd touches: 0 with
 * *cached, how many of them the page cache holds, or -1 with errno
 * (refused). */
static int cachestat_count(int fd, uint64_t off, uint64_t len,
                           unsigned long page, uint64_t *cached)
{
	struct cachestat_range range;
	struct cachestat cs;

	/* Whole pages: cachestat counts the pages the range touches. */
	range.off = off - off % page;
	range.len = off + len - range.off;
	if (syscall(__NR_cachestat, fd, &range, &cs, 0) == -1)
		return -1;
	*cached = cs.nr_cache;
	return 0;
}

/* cachestat(2) of [off, off + len) of fd: 1 all cached, 0 not, -1 with
 * errno (refused). */
static int cachestat_holds(int fd, uint64_t off, uint64_t len,
                           unsigned long page)
{
	uint64_t cached;

	if (cachestat_count(fd, off, len, page, &cached) == -1)
		return -1;
	return readahead_all_cached(off, len, cached, page);
}

/* One byte of each sampled page read with RWF_NOWAIT, which the kernel
 * answers from the page cache or not at all (EAGAIN): 1 all cached, 0
 * not (the first miss ends it), -1 with errno (refused: a file system
 * without non-blocking buffered reads).  A miss starts reading that page
 * (Linux 5.9 and later): a page of the range the hint then asks for
 * anyway.  Past the end of the file: not cached. */
static int nowait_holds(int fd, uint64_t off, uint64_t len, unsigned long page)
{
	uint64_t at[READAHEAD_SAMPLES];
	unsigned n = readahead_samples(off, len, page, at), i;
	char byte;
	struct iovec iov = {&byte, 1};
	ssize_t r;

	for (i = 0; i < n; i++) {
		r = preadv2(fd, &iov, 1, (off_t)at[i], RWF_NOWAIT);
		if (r == 1)
			continue;
		if (r == -1 && errno != EAGAIN)
			return -1;
		return 0;
	}
	return 1;
}

unsigned readahead_nowait_skip(int cached)
{
	return cached ? 0 : READAHEAD_COLD_SKIP;
}

/* cachestat(2) refused a file (errno): its reader asks the next way. */
static void cachestat_refused(struct residency *res)
{
	int all_files;

	res->way = readahead_residency_after(errno, &all_files);
	if (all_files)
		cachestat_missing = 1;
}

/* Every page that [off, off + len) of fd touches is in the page cache:
 * 1; some are not: 0; that cannot be told: -1.  *res: how this file is
 * asked (its reader's), moved on when the kernel refuses a way. */
static int page_cache_holds(int fd, uint64_t off, uint64_t len,
                            struct residency *res)
{
	unsigned long page = (unsigned long)getpagesize();
	int rc;

	if (res->way == RESIDENCY_CACHESTAT && cachestat_missing)
		res->way = RESIDENCY_NOWAIT;
	if (res->way == RESIDENCY_CACHESTAT) {
		if ((rc = cachestat_holds(fd, off, len, page)) != -1)
			return rc;
		cachestat_refused(res);
	}
	if (res->way == RESIDENCY_NOWAIT) {
		if (res->unasked > 0) {
			/* Cold a moment ago: hinted without asking. */
			res->unasked--;
			return 0;
		}
		if ((rc = nowait_holds(fd, off, len, page)) == -1) {
			res->way = RESIDENCY_UNKNOWN;
			return -1;
		}
		res->unasked = readahead_nowait_skip(rc);
		return rc;
	}
	return -1;
}

int readahead_uncached(struct handle *h, uint64_t off, uint64_t len)
{
	uint64_t cached;

	if (h->residency.way != RESIDENCY_CACHESTAT || cachestat_missing)
		return -1;
	if (cachestat_count(h->fd, off, len, (unsigned long)getpagesize(),
	                    &cached) == 0)
		return cached == 0;
	cachestat_refused(&h->residency);
	return -1;
}

static void hint_done(struct io_op *op)
{
	close(op->fd);
	hint_busy[op - hint_ops] = 0;
}

/* 1: the kernel was asked, or need not be (all cached); 0: no hint
 * went out (all slots busy, or no descriptor), so it may be asked again. */
static int hint(int fd, uint64_t from, uint64_t len, struct residency *res)
{
	struct io_op *op;
	int i;

	/* Every page in the page cache already: a hint would only make a
	 * worker thread walk those pages for nothing (a warm download spent
	 * a tenth of its CPU so); one system call here, in the loop, costs
	 * far less.  A window reaching past the end of the file counts as
	 * not cached: near the end there is one hint more. */
	if (page_cache_holds(fd, from, len, res) == 1)
		return 1;
	for (i = 0; i < READAHEAD_OPS && hint_busy[i]; i++)
		;
	if (i == READAHEAD_OPS)
		return 0;
	op = &hint_ops[i];
	op->opcode = IO_READAHEAD;
	/* A descriptor of its own: the handle may be closed while the hint
	 * waits (CLOSE does not wait for hints), and its number reused for
	 * another file. */
	if ((op->fd = fcntl(fd, F_DUPFD_CLOEXEC, 0)) == -1)
		return 0;
	op->offset = from;
	op->len = (size_t)len;
	op->done = hint_done;
	op->owner = NULL;
	/* A hint: if the back end is full, there is simply none. */
	if (backend->submit(op) != 0) {
		close(op->fd);
		return 0;
	}
	hint_busy[i] = 1;
	return 1;
}

int readahead_fs_hints_waiting(unsigned long fs_type)
{
	switch (fs_type) {
	case 0xef53:     /* ext2, ext3, ext4 */
	case 0x58465342: /* xfs */
	case 0x9123683e: /* btrfs */
		return 1;
	default:
		return 0;
	}
}

void readahead_on_open(struct handle *h, unsigned long fs_type)
{
	/* Doubles the kernel's own read-ahead for this file. */
	(void)posix_fadvise(h->fd, 0, 0, POSIX_FADV_SEQUENTIAL);
	h->next_read = 0;
	h->ahead_until = 0;
	h->hint_waiting = readahead_fs_hints_waiting(fs_type);
	h->residency = (struct residency){readahead_first_way(fs_type), 0};
}

int readahead_advance(int fd, uint64_t *next_read, uint64_t *ahead_until,
                      struct residency *res, uint64_t off, uint64_t len)
{
	uint64_t end = off + len, from;

	if (off != *next_read) {
		/* A seek: start over from here, with no hint until the stream
		 * proves sequential again. */
		*next_read = end;
		*ahead_until = end;
		return 0;
	}
	*next_read = end;
	if (*ahead_until >= end + READAHEAD_REFILL)
		return 1;
	from = *ahead_until > end ? *ahead_until : end;
	*ahead_until = end + READAHEAD_WINDOW;
	(void)hint(fd, from, *ahead_until - from, res);
	return 1;
}

enum readahead_plan readahead_queued_plan(uint64_t next_read,
                                          uint64_t *ahead_until, uint64_t off,
                                          uint64_t len, uint64_t *from,
                                          uint64_t *n)
{
	uint64_t end, limit;

	if (len == 0 || off > UINT64_MAX - len)
		return READAHEAD_NONE;
	end = off + len;
	/* Elsewhere in the file (random reads, a second stream): none.  A
	 * hint of each random READ's own range was measured to cost more
	 * than the depth it gives (doc/design.md, "Read-ahead hints"). */
	if (off < next_read || off > *ahead_until)
		return READAHEAD_NONE;
	/* The stream's own continuation: what lies beyond the window asked
	 * for already, up to a bound ahead of where the stream is, once that
	 * is a step's worth (until then, later, with the READs behind). */
	limit = next_read > UINT64_MAX - READAHEAD_QUEUED_MAX
	            ? UINT64_MAX
	            : next_read + READAHEAD_QUEUED_MAX;
	if (end > limit)
		end = limit;
	if (end <= *ahead_until)
		return READAHEAD_NONE;
	if (end - *ahead_until < READAHEAD_QUEUED_STEP)
		return READAHEAD_LATER;
	*from = *ahead_until;
	*n = end - *from;
	*ahead_until = end;
	return READAHEAD_HINT;
}

int readahead_queued(struct handle *h, uint64_t off, uint64_t len)
{
	uint64_t from, n, until = h->ahead_until;

	if (!h->hint_waiting)
		return 1;
	switch (
	    readahead_queued_plan(h->next_read, &until, off, len, &from, &n)) {
	case READAHEAD_NONE:
		return 1;
	case READAHEAD_LATER:
		return 0;
	case READAHEAD_HINT:
		break;
	}
	if (!hint(h->fd, from, n, &h->residency))
		return 0;
	h->ahead_until = until;
	return 1;
}

int readahead_on_read(struct handle *h, uint64_t off, uint32_t len)
{
	return readahead_advance(h->fd, &h->next_read, &h->ahead_until,
	                         &h->residency, off, len);
}
