/* SPDX-License-Identifier: ISC
 * Copyright (c) 2026 The uring-sftp-server developers.  See LICENSE. */
/* The session's memory for READ data in flight: see readmem.h. */
#include "config.h"

#include <errno.h>
#include <stdlib.h>
#include <sys/mman.h>

#include "readmem.h"

/* --- The ring (pure) ----------------------------------------------------- */

int readmem_ring_init(struct readmem_ring *r, size_t size, unsigned max_pieces)
{
	r->size = r->limit = size;
	r->wrap = 0;
	r->first = r->count = 0;
	r->cap = max_pieces > 0 ? max_pieces : 1;
	r->pieces = calloc(r->cap, sizeof(*r->pieces));
	return r->pieces != NULL ? 0 : -1;
}

void readmem_ring_free(struct readmem_ring *r)
{
	free(r->pieces);
	r->pieces = NULL;
	r->cap = r->count = r->first = 0;
}

static struct readmem_piece *piece_at(const struct readmem_ring *r, unsigned i)
{
	return &r->pieces[(r->first + i) % r->cap];
}

int readmem_ring_take(struct readmem_ring *r, size_t len, size_t *off)
{
	const struct readmem_piece *oldest, *newest;
	struct readmem_piece *p;
	size_t end, at, lim = r->limit;

	if (len == 0 || len > r->size || r->count == r->cap)
		return -1;
	if (r->count == 0) {
		/* Alone, a piece may pass the window: a READ larger than a
		 * small window still runs, one at a time. */
		at = 0;
	} else {
		oldest = piece_at(r, 0);
		newest = piece_at(r, r->count - 1);
		end = newest->off + newest->len;
		if (newest->off >= oldest->off) {
			/* Not wrapped: room after the newest, else from the
			 * start up to the oldest. */
			if (end <= lim && lim - end >= len) {
				at = end;
			} else if (oldest->off >= len && len <= lim) {
				at = 0;
				r->wrap = end;
			} else {
				return -1;
			}
		} else if (oldest->off - end >= len && end + len <= lim) {
			at = end; /* wrapped: only between the two */
		} else {
			return -1;
		}
	}
	p = piece_at(r, r->count);
	p->off = at;
	p->len = len;
	p->live = 1;
	r->count++;
	*off = at;
	return (int)((r->first + r->count - 1) % r->cap);
}

void readmem_ring_give(struct readmem_ring *r, int slot)
{
	if (slot < 0 || (unsigned)slot >= r->cap)
		return;
	r->pieces[slot].live = 0;
	/* The oldest pieces given back free their room; a piece given back
	 * out of order waits for those before it. */
	while (r->count > 0 && !piece_at(r, 0)->live) {
		r->first = (r->first + 1) % r->cap;
		r->count--;
	}
	while (r->count > 0 && !piece_at(r, r->count - 1)->live)
		r->count--;
}

size_t readmem_ring_held(const struct readmem_ring *r)
{
	const struct readmem_piece *oldest, *newest;
	size_t end;

	if (r->count == 0)
		return 0;
	oldest = piece_at(r, 0);
	newest = piece_at(r, r->count - 1);
	end = newest->off + newest->len;
	if (newest->off >= oldest->off)
		return end - oldest->off;
	return r->wrap - oldest->off + end;
}

void readmem_ring_limit(struct readmem_ring *r, size_t limit)
{
	r->limit = limit < r->size ? limit : r->size;
}

size_t readmem_ring_reach(const struct readmem_ring *r)
{
	size_t reach = 0, end;
	unsigned i;

	for (i = 0; i < r->count; i++) {
		end = piece_at(r, i)->off + piece_at(r, i)->len;
		if (piece_at(r, i)->live && end > reach)
			reach = end;
	}
	return reach;
}

int readmem_new_pages(size_t touched, size_t off, size_t len, size_t *from,
                      size_t *to)
{
	size_t start = off / READMEM_PAGE * READMEM_PAGE;
	size_t end =
	    (off + len + READMEM_PAGE - 1) / READMEM_PAGE * READMEM_PAGE;
	size_t used =
	    (touched + READMEM_PAGE - 1) / READMEM_PAGE * READMEM_PAGE;

	if (start < used)
		start = used;
	if (len == 0 || end <= start)
		return 0;
	*from = start;
	*to = end;
	return 1;
}

/* --- The session's region ------------------------------------------------ */

#ifndef MADV_POPULATE_WRITE
#define MADV_POPULATE_WRITE 23 /* Linux 5.14 */
#endif

static struct readmem_ring ring;
static uint8_t *base;
static size_t touched;  /* pages may be in use below this */
static int short_taken; /* the last take found no room */
static int no_populate; /* the kernel refused MADV_POPULATE_WRITE */

int readmem_init(unsigned max_pieces)
{
	void *p;

	if (base != NULL)
		return 0;
	p = mmap(NULL, READMEM_BYTES, PROT_READ | PROT_WRITE,
	         MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (p == MAP_FAILED)
		return -errno;
	if (readmem_ring_init(&ring, READMEM_BYTES, max_pieces) != 0) {
		munmap(p, READMEM_BYTES);
		return -ENOMEM;
	}

	base = p;
	return 0;
}

uint8_t *readmem_take(size_t len, int *slot)
{
	size_t off, from, to;

	if (base == NULL || (*slot = readmem_ring_take(&ring, len, &off)) < 0) {
		short_taken = 1;
		return NULL;
	}
	short_taken = 0;
	if (!no_populate && readmem_new_pages(touched, off, len, &from, &to) &&
	    madvise(base + from, to - from, MADV_POPULATE_WRITE) != 0 &&
	    (errno == EINVAL || errno == EPERM || errno == ENOSYS))
		no_populate = 1; /* before 5.14, or a filter: they fault in */
	if (off + len > touched)
		touched = off + len;
	return base + off;
}

void readmem_give(int slot)
{
	readmem_ring_give(&ring, slot);
}

int readmem_waiting(void)
{
	return short_taken;
}

/* Give back the pages from "from" on, as far as pieces have used them. */
static void release_from(size_t from)
{
	from = (from + READMEM_PAGE - 1) / READMEM_PAGE * READMEM_PAGE;
	if (from >= touched)
		return;
	(void)madvise(base + from, touched - from, MADV_DONTNEED);
	touched = from;
}

void readmem_set_window(size_t bytes, size_t keep)
{
	size_t reach;

	if (base == NULL)
		return;
	readmem_ring_limit(&ring, bytes);
	/* Pages past what is kept that no piece holds go back now; those a
	 * piece still holds, at a later call. */
	reach = readmem_ring_reach(&ring);
	if (keep < ring.limit)
		keep = ring.limit;
	release_from(reach > keep ? reach : keep);
}

int readmem_reclaimable(void)
{
	return base != NULL && touched != 0 && ring.count == 0;
}

void readmem_release_idle(void)
{
	if (!readmem_reclaimable())
		return;
	release_from(0);
}
