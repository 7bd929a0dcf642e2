/* SPDX-License-Identifier: ISC
 * Copyright (c) 2026 The uring-sftp-server developers.  See LICENSE. */
/* Kernel read-ahead hints for READs on a handle: a window ahead of a
 * sequential stream, and the stream's READs waiting for READ memory; a
 * range the page cache holds already (cachestat(2), or where the kernel
 * refuses it for the file, one-byte RWF_NOWAIT reads of a few of its
 * pages) gets none. */
#ifndef READAHEAD_H
#define READAHEAD_H

#include <stdint.h>

#include "residency.h"

struct handle;

/* A file was opened for reading; fs_type: its file system's statfs(2)
 * f_type, 0 when unknown. */
void readahead_on_open(struct handle *h, unsigned long fs_type);
/* A READ of [off, off + len) on h is about to run: 1 when it continues
 * h's sequential stream (whose window covers it), 0 when it starts one
 * anew (a seek). */
int readahead_on_read(struct handle *h, uint64_t off, uint32_t len);
/* The same for any sequential reader of fd that keeps its own position
 * (check-file): a read of [off, off + len) was just submitted; *res: the
 * reader's residency state (RESIDENCY_INIT at first). */
int readahead_advance(int fd, uint64_t *next_read, uint64_t *ahead_until,
                      struct residency *res, uint64_t off, uint64_t len);

/* Does the page cache hold none of [off, off + len) of h's file?  1 none,
 * 0 some, -1 cannot say (the kernel answers cachestat(2) for this file
 * only where the user may write it; RWF_NOWAIT's way of asking would
 * start reading what it finds missing). */
int readahead_uncached(struct handle *h, uint64_t off, uint64_t len);

/* A READ of [off, off + len) on h waits to run (for READ memory): if it
 * continues h's sequential stream, ask the kernel to read it into the
 * page cache now.  1 when asked, or when there is nothing to ask (cached,
 * within the stream's window already, not the stream's); 0 when it is to
 * be asked again later, with the READs that follow it (less than a step
 * of 2 MiB beyond the window yet, or the hint's slots busy). */
int readahead_queued(struct handle *h, uint64_t off, uint64_t len);

/* Its decision, pure (tests/check_readahead.c): for a stream at next_read
 * whose read-ahead reaches *ahead_until, what to do for waiting READs of
 * [off, off + len).  A continuation of the stream (starting from next_read
 * up to *ahead_until) gets a hint of what lies beyond *ahead_until,
 * bounded to 32 MiB ahead of next_read, once that is 2 MiB or more
 * (READAHEAD_HINT, [*from, *from + *n), and *ahead_until moves to its
 * end), until then READAHEAD_LATER; a range within the window already,
 * or elsewhere (random reads), READAHEAD_NONE. */
enum readahead_plan { READAHEAD_NONE, READAHEAD_HINT, READAHEAD_LATER };
enum readahead_plan readahead_queued_plan(uint64_t next_read,
                                          uint64_t *ahead_until, uint64_t off,
                                          uint64_t len, uint64_t *from,
                                          uint64_t *n);

/* Do READs waiting for READ memory get hints of their own on this file
 * system (statfs(2)'s f_type)?  Only where a hint was measured to give
 * the device the client's depth: block-device file systems, whose
 * read-ahead goes straight to the device's queue.  Not FUSE, whose
 * read-ahead queues behind a few background requests (max_background,
 * 12): random READs there ran at half the rate with hints, the READs
 * themselves, each a request of its own, getting more at once. */
int readahead_fs_hints_waiting(unsigned long fs_type);

/* The decision, pure (tests/check_readahead.c): are all pages of n bytes at
 * off cached, when the kernel counted cached of them? */
int readahead_all_cached(uint64_t off, uint64_t n, uint64_t cached,
                         unsigned long page);

/* The way a file's residency is asked first, by its file system's
 * statfs(2) f_type (pure): RWF_NOWAIT's on overlayfs, whose cachestat
 * counts the pages of its own inode, which never holds any (they are the
 * file's below it: a warm file of the user's answered 0 of 16384 cached,
 * and every range was hinted after a cachestat each); cachestat's
 * elsewhere. */
enum residency_way readahead_first_way(unsigned long fs_type);

/* The decision, pure: cachestat failed with err on a file; the file's way
 * from now on (RESIDENCY_NOWAIT, whatever the error: it needs no
 * permission beyond reading), and *all_files set when no file can have
 * cachestat either (ENOSYS: a kernel before 6.5).  EPERM (a file the
 * user may not write) is this file's alone. */
enum residency_way readahead_residency_after(int err, int *all_files);

/* Where RWF_NOWAIT looks (pure): at most READAHEAD_SAMPLES page offsets
 * of [off, off + len), into at[]: its first page, its last, and between
 * them evenly, about one a READAHEAD_SAMPLE_GAP; their count. */
#define READAHEAD_SAMPLES 4
#define READAHEAD_SAMPLE_GAP (1024 * 1024)
unsigned readahead_samples(uint64_t off, uint64_t len, unsigned long page,
                           uint64_t at[READAHEAD_SAMPLES]);

/* When RWF_NOWAIT said "not cached", how many ranges that follow are
 * hinted without asking (pure): READAHEAD_COLD_SKIP.  A miss starts
 * reading its page, a small read of its own ahead of the hint's (a cold
 * download of root's 512 MiB file took 857-959 device requests when every
 * window was asked, 562-740 with the skip: doc/design.md); a cold stream
 * mostly stays cold, and a cached stretch after it costs at most that
 * many hints. */
#define READAHEAD_COLD_SKIP 3
unsigned readahead_nowait_skip(int cached);

#endif
