/* SPDX-License-Identifier: ISC
 * Copyright (c) 2026 The uring-sftp-server developers.  See LICENSE. */
/* --nocache (nocache.h says what and how): the decisions, pure, and the
 * system calls that ask and drop. */
#include "config.h"

#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include "log.h"
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
static int hidden_told; /* the log line of residency_hidden, once */

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

static int bit(const uint8_t *map, uint64_t i)
{
	return (map[i / 8] >> (i % 8)) & 1;
}

void nocache_drop_runs(const uint8_t *map, uint64_t from, uint64_t to,
                       unsigned long page,
                       void (*emit)(void *arg, uint64_t off, uint64_t len),
                       void *arg)
{
	uint64_t i = from, start;

	while (i < to) {
		if (bit(map, i)) {
			i++;
			continue;
		}
		for (start = i; i < to && !bit(map, i);)
			i++;
		emit(arg, start * page, (i - start) * page);
	}
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
		if (refused_before(nc->dev))
			return;
		/* Once per file system (while there is room to remember). */
		verbose("--nocache: no RWF_DONTCACHE on device %u:%u: the "
		        "server drops the pages itself",
		        major(nc->dev), minor(nc->dev));
		if (refused_devs < REFUSED_DEVS)
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

int nocache_mincore_hides(unsigned char past_end)
{
	return past_end & 1;
}

/* Does the kernel hide which of fd's pages are cached from this user?
 * A page past the end of the file (at size, rounded up) is never cached:
 * a mapping may reach there (only touching it would fault), and mincore
 * of it says resident only where the kernel answers "resident" for every
 * page (a file this user may neither own nor write: mm/mincore.c,
 * can_do_mincore).  A file grown since OPEN may say so too: its pages
 * are then kept, which is safe. */
static int residency_hidden(int fd, uint64_t size)
{
	uint64_t first = (size + page_size() - 1) / page_size();
	unsigned char vec = 0;

	if (pages_resident(fd, first, 1, &vec) != 0)
		return 0; /* no mapping: map_fill keeps every page anyway */
	return nocache_mincore_hides(vec);
}

/* Ask about pages [nc->known, to) into the map (as far as it reaches). */
static void map_fill(struct nocache_state *nc, int fd, uint64_t to)
{
	static unsigned char vec[NOCACHE_AHEAD_PAGES];
	uint64_t n, i, pg;

	if (to > nc->base + NOCACHE_MAP_PAGES)
		to = nc->base + NOCACHE_MAP_PAGES;
	while (nc->known < to) {
		n = to - nc->known;
		if (n > NOCACHE_AHEAD_PAGES)
			n = NOCACHE_AHEAD_PAGES;
		if (pages_resident(fd, nc->known, n, vec) != 0)
			memset(vec, 1, n); /* cannot tell: keep them all */
		for (i = 0; i < n; i++) {
			pg = nc->known + i - nc->base;
			if (vec[i] & 1)
				nc->map[pg / 8] |= (uint8_t)(1u << (pg % 8));
		}
		nc->known += n;
	}
}

void nocache_before_read(struct nocache_state *nc, int fd, uint64_t off,
                         uint64_t len, struct nocache_read *r)
{
	unsigned long page = page_size();
	uint64_t first = off / page, last = (off + len - 1) / page, i, shift;

	memset(r, 0, sizeof(*r));
	if (nc->mode == NOCACHE_OFF || nc->confirmed || nc->hidden || len == 0)
		return;
	if (nc->map == NULL && residency_hidden(fd, nc->old_size)) {
		/* Nothing known: nothing dropped. */
		nc->hidden = 1;
		if (!hidden_told) {
			hidden_told = 1;
			verbose(
			    "--nocache: the kernel does not tell which pages "
			    "of a file this user may not write are cached "
			    "(mincore): a download of one without "
			    "RWF_DONTCACHE leaves its pages cached");
		}
		return;
	}
	if (nc->map == NULL &&
	    (nc->map = calloc(NOCACHE_MAP_PAGES / 8, 1)) == NULL)
		return; /* nothing known: nothing dropped */
	if (first < nc->base || first > nc->known) {
		/* A seek away from what is known: start over there. */
		nc->base = nc->known = nc->dropped = first - first % 8;
		memset(nc->map, 0, NOCACHE_MAP_PAGES / 8);
	} else if (last + NOCACHE_AHEAD_PAGES >= nc->base + NOCACHE_MAP_PAGES) {
		/* Slide the map to start at this READ, or where the stream
		 * is dropped up to. */
		shift =
		    ((first < nc->dropped ? first : nc->dropped) - nc->base) /
		    8;
		memmove(nc->map, nc->map + shift,
		        NOCACHE_MAP_PAGES / 8 - shift);
		memset(nc->map + NOCACHE_MAP_PAGES / 8 - shift, 0, shift);
		nc->base += shift * 8;
	}
	/* Asked in long runs, half the way ahead at a time. */
	if (nc->known < last + 1 + NOCACHE_AHEAD_PAGES / 2)
		map_fill(nc, fd, last + 1 + NOCACHE_AHEAD_PAGES);
	/* Pages past the READ, or past what is known, count as cached:
	 * kept. */
	for (i = 0; i < NOCACHE_READ_PAGES; i++)
		if (i > last - first || first + i >= nc->known ||
		    bit(nc->map, first + i - nc->base))
			r->resident[i / 8] |= (uint8_t)(1u << (i % 8));
	r->probed = 1;
}

static void drop(int fd, uint64_t off, uint64_t len)
{
	(void)posix_fadvise(fd, (off_t)off, (off_t)len, POSIX_FADV_DONTNEED);
}

/* Where a map's page 0 is: drop_emit's argument. */
struct drop_at {
	int fd;
	uint64_t from; /* bytes */
};

static void drop_emit(void *arg, uint64_t off, uint64_t len)
{
	const struct drop_at *at = arg;

	drop(at->fd, at->from + off, len);
}

/* The stream's pages not cached before, up to page to, dropped (to: a
 * page the map covers). */
static void drop_stream(struct nocache_state *nc, int fd, uint64_t to)
{
	uint64_t page = page_size();
	struct drop_at at = {fd, nc->base * page};

	if (nc->map == NULL || to <= nc->dropped || nc->dropped < nc->base)
		return;
	nocache_drop_runs(nc->map, nc->dropped - nc->base, to - nc->base, page,
	                  drop_emit, &at);
	nc->dropped = to;
}

void nocache_after_read(struct nocache_state *nc, int fd, uint64_t off,
                        uint64_t n, const struct nocache_read *r)
{
	unsigned long page = page_size();
	uint64_t first = off / page, end = (off + n) / page, align;
	struct drop_at at = {fd, first * page};

	if (nc->mode != NOCACHE_DROP || !r->probed || n == 0)
		return;
	if (first < nc->dropped || end > nc->known) {
		/* Behind the stream (or a seek since): its own pages. */
		nocache_drop_runs(r->resident, 0,
		                  (off + n + page - 1) / page - first, page,
		                  drop_emit, &at);
		return;
	}
	align = NOCACHE_DROP_ALIGN / page;
	drop_stream(nc, fd, end - end % align);
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
	/* Only pages past the old end: a page of the file before it may
	 * have been cached before.  A partial page at either end is ours
	 * (the WRITE next to it fills it). */
	from = off - off % page;
	if (from < (nc->old_size + page - 1) / page * page)
		from = (nc->old_size + page - 1) / page * page;
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

void nocache_forget(struct nocache_state *nc)
{
	free(nc->map);
	nc->map = NULL;
}

void nocache_close(struct nocache_state *nc, int fd)
{
	if (nc->mode != NOCACHE_DROP)
		return;
	drop_stream(nc, fd, nc->known); /* none of those was cached */
	writeback_step(nc, fd);         /* the written run to write-back */
	writeback_step(nc, fd);         /* and dropped */
}
