/* SPDX-License-Identifier: ISC
 * Copyright (c) 2026 The uring-sftp-server developers.  See LICENSE. */
/* --nocache (nocache.h says what and how): the decisions, pure, and the
 * system calls that ask and drop. */
#include "config.h"

#include <fcntl.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "nocache.h"
#include "testkernel.h"

/* Written bytes handed to write-back at once in our way: one run is
 * written back while the next is written, then dropped. */
#define NOCACHE_WRITEBACK_RUN (8 * 1024 * 1024)

/* File systems that refused RWF_DONTCACHE (a kernel without it refuses
 * on every one): their next files start in our way at once.  Few: a
 * session rarely spans more. */
#define REFUSED_DEVS 8

int nocache_wanted;

static dev_t refused_dev[REFUSED_DEVS];
static int refused_devs;

static unsigned long page_size(void)
{
	static unsigned long page;
	long p;

	if (page == 0)
		page =
		    (p = sysconf(_SC_PAGESIZE)) > 0 ? (unsigned long)p : 4096;
	return page;
}

static int refused_before(dev_t dev)
{
	int i;

	for (i = 0; i < refused_devs; i++)
		if (refused_dev[i] == dev)
			return 1;
	return 0;
}

static int was_resident(const uint64_t *resident, uint64_t i)
{
	return i >= NOCACHE_READ_PAGES || (resident[i / 64] >> (i % 64)) & 1;
}

int nocache_drop_ranges(uint64_t off, uint64_t n, unsigned long page,
                        const uint64_t resident[NOCACHE_READ_PAGES / 64],
                        int at_end, uint64_t runs[][2], int max)
{
	uint64_t first = off / page, end = (off + n + page - 1) / page, i, from;
	int count = 0;

	if (n == 0)
		return 0;
	/* A partial last page: the next READ's first page. */
	if (!at_end && (off + n) % page != 0)
		end--;
	for (i = first; i < end && count < max;) {
		if (was_resident(resident, i - first)) {
			i++;
			continue;
		}
		for (from = i; i < end && !was_resident(resident, i - first);)
			i++;
		runs[count][0] = from * page;
		runs[count][1] = (i - from) * page;
		count++;
	}
	return count;
}

void nocache_open(struct nocache_state *nc, int fd, int regular, dev_t dev,
                  uint64_t size)
{
	memset(nc, 0, sizeof(*nc));
	if (!nocache_wanted || !regular)
		return;
	nc->dev = dev;
	nc->old_size = size;
	/* RWF_DONTCACHE came in 6.14 (a test acting as an older kernel
	 * takes our way at once). */
	nc->mode = refused_before(dev) || testkernel_before(6, 14)
	               ? NOCACHE_DROP
	               : NOCACHE_KERNEL;
	/* No read-ahead of the kernel's until RWF_DONTCACHE is known to
	 * work (then its read-ahead is dropped too): in our way pages read
	 * ahead would look cached before. */
	(void)posix_fadvise(fd, 0, 0, POSIX_FADV_RANDOM);
}

int nocache_rw_flags(const struct nocache_state *nc)
{
	return nc->mode == NOCACHE_KERNEL ? RWF_DONTCACHE : 0;
}

void nocache_after_io(struct nocache_state *nc, int fd, int refused)
{
	if (nc->mode != NOCACHE_KERNEL)
		return;
	if (refused) {
		nc->mode = NOCACHE_DROP;
		if (refused_devs < REFUSED_DEVS && !refused_before(nc->dev))
			refused_dev[refused_devs++] = nc->dev;
	} else if (!nc->confirmed) {
		/* The kernel drops what it reads ahead for such reads. */
		nc->confirmed = 1;
		(void)posix_fadvise(fd, 0, 0, POSIX_FADV_SEQUENTIAL);
	}
}

/* mincore(2) of a mapping of npages pages of fd from page first: 0 with
 * vec filled, -1 (mapping refused: /proc, a write-only descriptor). */
static int pages_resident(int fd, uint64_t first, uint64_t npages,
                          unsigned char *vec)
{
	size_t len = npages * page_size();
	void *map = mmap(NULL, len, PROT_READ, MAP_SHARED, fd,
	                 (off_t)(first * page_size()));
	int rc;

	if (map == MAP_FAILED)
		return -1;
	rc = mincore(map, len, vec);
	munmap(map, len);
	return rc;
}

void nocache_before_read(struct nocache_state *nc, int fd, uint64_t off,
                         uint64_t len, struct nocache_read *r)
{
	unsigned long page = page_size();
	uint64_t first = off / page, npages, i;
	unsigned char vec[NOCACHE_READ_PAGES];

	memset(r, 0, sizeof(*r));
	if (nc->mode == NOCACHE_OFF || nc->confirmed || len == 0)
		return;
	npages = (off + len + page - 1) / page - first;
	if (npages > NOCACHE_READ_PAGES)
		npages = NOCACHE_READ_PAGES; /* the rest is kept */
	if (pages_resident(fd, first, npages, vec) != 0)
		memset(vec, 1, sizeof(vec)); /* cannot tell: keep them all */
	/* The page the READ before brought in is not one cached before. */
	if (nc->carry_page == first + 1)
		vec[0] = 0;
	for (i = 0; i < npages; i++)
		if (vec[i] & 1)
			r->resident[i / 64] |= (uint64_t)1 << (i % 64);
	nc->carry_page = (off + len) % page != 0 && !(vec[npages - 1] & 1)
	                     ? first + npages
	                     : 0;
	r->probed = 1;
}

static void drop(int fd, uint64_t off, uint64_t len)
{
	(void)posix_fadvise(fd, (off_t)off, (off_t)len, POSIX_FADV_DONTNEED);
}

void nocache_after_read(struct nocache_state *nc, int fd, uint64_t off,
                        uint64_t n, int at_end, const struct nocache_read *r)
{
	uint64_t runs[NOCACHE_READ_PAGES / 2 + 1][2];
	int i, count;

	if (nc->mode != NOCACHE_DROP || !r->probed)
		return;
	count = nocache_drop_ranges(off, n, page_size(), r->resident, at_end,
	                            runs, NOCACHE_READ_PAGES / 2 + 1);
	for (i = 0; i < count; i++)
		drop(fd, runs[i][0], runs[i][1]);
}

/* The run under write-back: on disk now, then dropped; the written run
 * becomes the one under write-back. */
static void writeback_step(struct nocache_state *nc, int fd)
{
	if (nc->wb_hi > nc->wb_lo) {
		(void)sync_file_range(
		    fd, (off_t)nc->wb_lo, (off_t)(nc->wb_hi - nc->wb_lo),
		    SYNC_FILE_RANGE_WAIT_BEFORE | SYNC_FILE_RANGE_WRITE |
		        SYNC_FILE_RANGE_WAIT_AFTER);
		drop(fd, nc->wb_lo, nc->wb_hi - nc->wb_lo);
	}
	nc->wb_lo = nc->lo;
	nc->wb_hi = nc->hi;
	if (nc->hi > nc->lo)
		(void)sync_file_range(fd, (off_t)nc->lo,
		                      (off_t)(nc->hi - nc->lo),
		                      SYNC_FILE_RANGE_WRITE);
	nc->lo = nc->hi = 0;
}

void nocache_after_write(struct nocache_state *nc, int fd, uint64_t off,
                         uint64_t n)
{
	unsigned long page = page_size();
	uint64_t from, to;

	if (nc->mode != NOCACHE_DROP || n == 0 || off == UINT64_MAX)
		return;
	/* Only whole pages past the old end: a page of the file before it
	 * may have been cached before. */
	from = off < nc->old_size ? nc->old_size : off;
	from = (from + page - 1) / page * page;
	to = (off + n + page - 1) / page * page;
	if (from >= to)
		return;
	if (nc->hi > nc->lo && (from > nc->hi || to < nc->lo))
		writeback_step(nc, fd); /* not contiguous: a run of its own */
	if (nc->hi == nc->lo) {
		nc->lo = from;
		nc->hi = to;
	}
	if (from < nc->lo)
		nc->lo = from;
	if (to > nc->hi)
		nc->hi = to;
	if (nc->hi - nc->lo >= NOCACHE_WRITEBACK_RUN)
		writeback_step(nc, fd);
}

void nocache_close(struct nocache_state *nc, int fd)
{
	if (nc->mode != NOCACHE_DROP)
		return;
	writeback_step(nc, fd); /* the written run to write-back */
	writeback_step(nc, fd); /* and dropped */
}
