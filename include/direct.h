/* SPDX-License-Identifier: ISC
 * Copyright (c) 2026 The uring-sftp-server developers.  See LICENSE. */
/* Cold random READs straight from the device.  A READ that starts no
 * sequential stream (a seek) and finds none of its range in the page cache
 * reads with O_DIRECT into its piece of READ memory: the device then sees
 * every such READ at once (READ memory's depth, 47 of 32 KiB), with no page
 * cache to fill and no copy out of it, where a buffered read costs both and
 * reached half of what the device gives O_DIRECT (doc/design.md, "Cold random
 * READs").  Sequential streams stay buffered: read-ahead hints give them the
 * client's depth without READ memory.
 *
 * Coherence is the kernel's: a direct read first writes back the range's
 * dirty pages and waits for that; a truncation or hole punch waits for direct
 * reads in flight, for the device's time, never a client's.  Each file asks
 * its own file system (statx(2) STATX_DIOALIGN, Linux 6.1): a file system
 * that gives no alignment (tmpfs, FUSE, NFS, an encrypted or inline file),
 * an older kernel, a READ not at that alignment, or a direct read refused
 * reads through the page cache as before. */
#ifndef DIRECT_H
#define DIRECT_H

#include <stdint.h>

/* A handle's direct reading.  Zeroed: not asked yet (the first READ that
 * could read direct asks). */
enum direct_way { DIRECT_UNASKED = 0, DIRECT_OPEN, DIRECT_REFUSED };

struct direct_state {
	enum direct_way way;
	int fd;                /* the file again, O_DIRECT, or -1 */
	unsigned busy;         /* direct READs set up and not yet done */
	unsigned unasked;      /* READs still read buffered without asking */
	unsigned backoff;      /* and how many after the last "cached" */
	uint32_t offset_align; /* a direct read's offset and length */
	uint32_t mem_align;    /* and its memory */
};

/* The decision, pure (tests/check_direct.c): may a READ of [off, off +
 * len) read direct, given the file's offset alignment (0: none), whether
 * it continues the handle's sequential stream, and where that stream was
 * to continue before it (stream_at)?  Then it does if the page cache
 * holds none of its range (readahead_uncached).  A READ within
 * DIRECT_NEAR of stream_at does not: a stream whose READs arrive a little
 * out of order (several threads of sshfs or rclone) stays buffered, and
 * keeps the kernel's read-ahead. */
#define DIRECT_NEAR (512 * 1024)
int direct_read_candidate(uint32_t offset_align, uint64_t off, uint64_t len,
                          int continues_stream, uint64_t stream_at);

/* Asking the page cache costs a system call per READ (cachestat), a tenth
 * of a warm random READ's time.  After a READ whose range was cached the
 * next few READs are read through the page cache without asking, twice as
 * many after each further cached answer, up to DIRECT_BACKOFF_MAX; a cold
 * answer asks at every READ again.  The decision, pure: the number to
 * skip after an answer (uncached: 1 none cached, 0 some, -1 cannot say),
 * given the number skipped after the last. */
#define DIRECT_BACKOFF_MAX 64
unsigned direct_backoff(unsigned backoff, int uncached);
/* Is the page cache to be asked for this READ (1), or is it read buffered
 * without asking (0, one fewer to skip)? */
int direct_ask(struct direct_state *d);
/* The page cache answered for a READ (uncached as above). */
void direct_answered(struct direct_state *d, int uncached);

/* Memory a direct read of len bytes takes in READ memory with a header of
 * header bytes in front (pure): room to align the bytes to mem_align. */
uint64_t direct_piece_len(uint32_t mem_align, uint64_t header, uint64_t len);
/* Where in a piece at p the bytes go (pure): the first address past header
 * bytes that is a multiple of mem_align. */
uintptr_t direct_bytes_at(uintptr_t p, uint32_t mem_align, uint64_t header);

/* The file's alignment, asked once: statx(2) of fd.  0 when the file
 * cannot read direct (and from then on). */
uint32_t direct_offset_align(struct direct_state *d, int fd);
/* A READ is to read direct: the descriptor to read with, the file opened
 * again by its descriptor (/proc/self/fd, so the same file whatever its
 * name now) for reading with O_DIRECT, kept while direct READs of the
 * handle are set up or in flight (direct_read_done); -1 when it reads
 * through the page cache instead: the open was refused (and from then on),
 * or not now.  A session holds one such descriptor at a time, and opens it
 * only while spare (handle_descriptors_to_spare: fewer than half the
 * handles the descriptor limit allows are open) or the limit stops it
 * (EMFILE, ENFILE), so it takes the spare that limits@openssh.com keeps
 * out of the handles it advertises, as OpenSSH reckons it, and no more. */
int direct_read_begin(struct direct_state *d, int fd, int spare);
/* A direct READ's read completed with result (bytes, or -errno).  EINVAL
 * or EOPNOTSUPP: the file system refuses direct reads after all, so no
 * more on this handle.  The last one in flight closes the descriptor: a
 * session holds it only while it reads direct, as a read-ahead hint holds
 * its duplicate only while it runs. */
void direct_read_done(struct direct_state *d, long result);
/* The handle goes: its direct descriptor with it. */
void direct_close(struct direct_state *d);

#endif
