/* SPDX-License-Identifier: ISC
 * Copyright (c) 2026 The uring-sftp-server developers.  See LICENSE. */
/* --nocache: a download or upload leaves the page cache as it found it.
 * Pages cached before the transfer stay cached; the pages it brings in
 * go again once their bytes are copied out (a READ) or on disk (a WRITE).
 *
 * Two ways, chosen per handle by its first read or write:
 *  - the kernel's (NOCACHE_KERNEL): every read and write carries
 *    RWF_DONTCACHE (Linux 6.14 and later, on ext4, xfs, btrfs and the
 *    like); the kernel drops a page it brought in for such a call once
 *    the call is done with it (after write-back for a write), its own
 *    read-ahead's too, and leaves a page it found cached alone;
 *  - ours (NOCACHE_DROP), where the kernel or the file system refuses
 *    the flag (EOPNOTSUPP): which pages are cached is asked (mincore of
 *    a mapping) NOCACHE_AHEAD_PAGES ahead of the READs, before anything
 *    of ours or the kernel's read-ahead can have touched them; after a
 *    READ, posix_fadvise(POSIX_FADV_DONTNEED) of its pages that were not;
 *    a file whose residency the kernel hides from this user (mincore
 *    says "all resident": one the user may not write) drops nothing.
 * Written ranges are written back behind the stream (sync_file_range) and then
 * dropped the same way, the rest at CLOSE. Either way the server's own
 * read-ahead hints are off for the handle (their pages would stay), and in our
 * way the kernel's too (POSIX_FADV_RANDOM): pages read ahead would look cached
 * before. */
#ifndef NOCACHE_H
#define NOCACHE_H

#include <stdint.h>
#include <sys/types.h>

/* preadv2/pwritev2's flag (linux/fs.h of 6.14; older headers lack it). */
#ifndef RWF_DONTCACHE
#define RWF_DONTCACHE 0x00000080
/* The decision, pure: mincore(2) said past_end of a page past the end of
 * a file, which is never cached: does the kernel hide the file's
 * residency (answer "resident" for every page)? */
int nocache_mincore_hides(unsigned char past_end);

#endif

/* Pages one READ's residency covers (2 x 64 bits: a 255 KiB READ of 4 KiB
 * pages at any offset touches at most 65). */
#define NOCACHE_READ_PAGES 128
/* Our way: what was cached is known for this many pages from the newest
 * READ on (a map of a bit each, 2 KiB per handle), asked half of it
 * ahead: 32 MiB of 4 KiB pages, beyond any kernel read-ahead window. */
#define NOCACHE_MAP_PAGES 16384
#define NOCACHE_AHEAD_PAGES (NOCACHE_MAP_PAGES / 2)

enum nocache_mode {
	NOCACHE_OFF = 0, /* no --nocache, or not a regular file */
	NOCACHE_KERNEL,  /* RWF_DONTCACHE (until the first call refuses it) */
	NOCACHE_DROP     /* mincore before, fadvise DONTNEED after */
};

/* A handle's (handle.h). */
struct nocache_state {
	enum nocache_mode mode;
	int confirmed;     /* a call took RWF_DONTCACHE */
	dev_t dev;         /* the file system, remembered when it refuses */
	uint64_t old_size; /* at OPEN: no page at or past it was cached */
	int hidden; /* our way, and the kernel hides what is cached (mincore
	             * says "all", a file the user may not write): nothing
	             * of a READ's is dropped */
	/* Our way's map of pages cached before: bit i is page base + i,
	 * known up to page known (malloc'd at the first READ; NULL: none). */
	uint8_t *map;
	uint64_t base, known;
	uint64_t dropped;      /* a stream's pages before it are dropped */
	uint64_t lo, hi;       /* written, write-back not started yet */
	uint64_t wb_lo, wb_hi; /* write-back started, not dropped yet */
};

/* A READ's (request.h): which of its pages were cached before it ran. */
struct nocache_read {
	int probed;
	uint8_t resident[NOCACHE_READ_PAGES / 8];
};

/* Set from --nocache at start. */
extern int nocache_wanted;

/* At OPEN of fd (size and dev from its fstat).  Not regular: off. */
void nocache_open(struct nocache_state *nc, int fd, int regular, dev_t dev,
                  uint64_t size);
/* The preadv2/pwritev2 flags for the handle's next read or write. */
int nocache_rw_flags(const struct nocache_state *nc);
/* Before a READ of [off, off + len) is submitted. */
void nocache_before_read(struct nocache_state *nc, int fd, uint64_t off,
                         uint64_t len, struct nocache_read *r);
/* After a read or write ran: refused says the kernel refused the flags
 * (io_op.rw_refused). */
void nocache_after_io(struct nocache_state *nc, int fd, int refused);
/* After a READ copied n bytes at off. */
void nocache_after_read(struct nocache_state *nc, int fd, uint64_t off,
                        uint64_t n, const struct nocache_read *r);
/* After a WRITE put n bytes at off (IO_NO_OFFSET: appended, unknown). */
void nocache_after_write(struct nocache_state *nc, int fd, uint64_t off,
                         uint64_t n);
/* At CLOSE, before fd is closed: the rest of what was written, on disk
 * and dropped (waits for the disk, in our way only). */
void nocache_close(struct nocache_state *nc, int fd);
/* The handle is gone (handle.c): its memory freed. */
void nocache_forget(struct nocache_state *nc);

/* Our way drops a sequential stream's pages behind it in aligned runs of
 * this many bytes: large folios (ext4 and xfs put read-ahead in folios of
 * up to 2 MiB) go only when DONTNEED covers them whole. */
#define NOCACHE_DROP_ALIGN (2 * 1024 * 1024)

/* The decision, pure (tests/check_nocache.c): which pages of [from, to)
 * to drop, given which were cached before the transfer (bit i of map,
 * byte i / 8, bit i % 8: page i): runs of those that were not, each
 * handed to emit(arg, offset, length) in bytes, whole pages.  A page two
 * READs share goes with both: one may read it again, none leaves it. */
void nocache_drop_runs(const uint8_t *map, uint64_t from, uint64_t to,
                       unsigned long page,
                       void (*emit)(void *arg, uint64_t off, uint64_t len),
                       void *arg);

/* The decision, pure: mincore(2) said past_end of a page past the end of
 * a file, which is never cached: does the kernel hide the file's
 * residency (answer "resident" for every page)? */
int nocache_mincore_hides(unsigned char past_end);

#endif
