/* SPDX-License-Identifier: ISC
 * Copyright (c) 2026 The uring-sftp-server developers.  See LICENSE. */
/* The session's memory for READ data in flight.  A READ's reply (its DATA
 * header and the bytes read) is built in one contiguous piece of a fixed
 * region, taken right before the read is submitted and given back once the
 * reply has been written to stdout: the bytes are copied out of the page
 * cache when the READ runs, so what the file does afterwards cannot change
 * the reply, and nothing of the file's is held meanwhile.  The region
 * bounds the READ data a session holds (READs beyond it wait, parsed, for
 * earlier replies to go out) and is mapped once, so a warm download
 * neither allocates nor faults pages per READ.
 *
 * Pieces are taken in arrival order and given back nearly so (replies
 * leave in arrival order; a READ that ends in EOF or an error gives its
 * piece back early), so the region is used as a ring: a piece is taken
 * after the newest, wrapping to the start when the end has no room. */
#ifndef READMEM_H
#define READMEM_H

#include <stddef.h>
#include <stdint.h>

/* The region: READ data a session may hold at once.  Measured in
 * doc/design.md ("READ memory"). */
#define READMEM_BYTES (1536 * 1024)
/* Pages are given back in this unit (the smallest page we run on). */
#define READMEM_PAGE 4096

/* The ring's bookkeeping, pure (tests/check_readmem.c): offsets only. */
struct readmem_piece {
	size_t off, len;
	int live;
};

struct readmem_ring {
	size_t size;                  /* bytes of the region */
	size_t limit;                 /* the window: new pieces end within */
	size_t wrap;                  /* where the newest ended at the last
	                               * wrap to the start */
	struct readmem_piece *pieces; /* oldest first, from first */
	unsigned cap;                 /* slots in pieces */
	unsigned first, count;        /* the oldest's slot; pieces held */
};

/* Slots for up to max_pieces pieces at once: 0, or -1 out of memory. */
int readmem_ring_init(struct readmem_ring *r, size_t size, unsigned max_pieces);
void readmem_ring_free(struct readmem_ring *r);
/* A piece of len bytes: its slot (>= 0) with *off where it starts, or -1
 * when there is no room until older pieces are given back. */
int readmem_ring_take(struct readmem_ring *r, size_t len, size_t *off);
/* Give back the piece in slot. */
void readmem_ring_give(struct readmem_ring *r, int slot);
/* Bytes between the oldest piece held and the end of the newest: what
 * the region holds now, gaps included (0 when empty). */
size_t readmem_ring_held(const struct readmem_ring *r);
/* Take new pieces only within the first limit bytes (at most the
 * region), except a piece alone in the ring, which may be as large as
 * the region.  Pieces held beyond stay until given back. */
void readmem_ring_limit(struct readmem_ring *r, size_t limit);
/* Where the last byte of a piece held ends (0 when none). */
size_t readmem_ring_reach(const struct readmem_ring *r);
/* A piece [off, off + len) taken where pages below touched are in use:
 * 1 with the pages it is the first to use, [*from, *to) in whole pages,
 * or 0 when it uses none that are new.  Those pages are filled in one
 * system call before the read is submitted: on a guest where each page
 * fault leaves to the hypervisor (this VM: 11-20 us a fault, 384 of them
 * for the region), faulting them one by one in the copy cost more than
 * the copy (doc/design.md, "READ memory"). */
int readmem_new_pages(size_t touched, size_t off, size_t len, size_t *from,
                      size_t *to);

/* The session's region, for up to max_pieces READs at once: 0, or -errno.
 * It is only address space until READs touch it, so a session that never
 * downloads holds no memory for it. */
int readmem_init(unsigned max_pieces);
/* A piece of len bytes for a READ: *slot and the memory, or NULL when the
 * READ must wait for earlier replies to go out. */
uint8_t *readmem_take(size_t len, int *slot);
void readmem_give(int slot);
/* The last READ that asked found no room: it waits for earlier replies,
 * or for a wider window. */
int readmem_waiting(void);
/* New pieces go within the first bytes of the region (footprint.h: the
 * window follows the reader's rate); pages past keep (at least bytes)
 * that no piece holds are given back to the system. */
void readmem_set_window(size_t bytes, size_t keep);
/* Nothing is held, but pages were used since they were last given back:
 * after a while with nothing to do, readmem_release_idle gives them to the
 * system (they come back, zeroed, on next use). */
int readmem_reclaimable(void);
void readmem_release_idle(void);

#endif
