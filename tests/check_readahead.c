/* SPDX-License-Identifier: ISC
 * Copyright (c) 2026 The uring-sftp-server developers.  See LICENSE. */
/* Unit tests of read-ahead hints and the back ends' room for them: a
 * hint never takes the slot an fsync or copy-data needs (whatever the
 * queue depth), and a hint still waiting after its handle was closed
 * never reaches another file that got the same descriptor number; the
 * page-cache decision that skips a hint (every page cached); and the
 * hints for READs waiting for READ memory: what range each gets (a
 * stream's continuation, bounded; a random READ none), on which file
 * systems, adjacent READs in one hint, and a hint that could not go out
 * asked again later. */
#include "config.h"

#include <check.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <syslog.h>
#include <unistd.h>

#include "backend.h"
#include "io.h"
#include "handle.h"
#include "handlers.h"
#include "log.h"
#include "readahead.h"
#include "request.h"
#include "sftp.h"

#define MiB (1024 * 1024)

static char dir[] = "/tmp/check_readahead.XXXXXX";

static void make_file(const char *name, size_t len)
{
	static char data[MiB];
	int fd = open(name, O_WRONLY | O_CREAT | O_TRUNC, 0644);

	ck_assert_int_ge(fd, 0);
	for (; len > 0; len -= len < sizeof(data) ? len : sizeof(data))
		ck_assert_int_gt(
		    write(fd, data, len < sizeof(data) ? len : sizeof(data)),
		    0);
	close(fd);
}

/* A handle on name with a sequential stream started: each further READ
 * of 256 KiB may send a hint. */
static struct handle *reader(const char *name)
{
	int fd = open(name, O_RDONLY), idx;
	struct handle *h;

	ck_assert_int_ge(fd, 0);
	idx = handle_new(HANDLE_FILE, name, fd, NULL, O_RDONLY);
	ck_assert_int_ge(idx, 0);
	h = handle_get(idx, HANDLE_FILE);
	readahead_on_open(h, 0xef53);
	return h;
}

/* Hints fill their slots, then an fsync must still run, at every depth
 * from 1 to 8, on both back ends. */
static void fsync_beside_hints(enum backend_choice which)
{
	struct io_op op;
	struct handle *h[BACKEND_HINT_SLOTS + 2];
	char name[32];
	unsigned depth, i;
	int fd;

	for (depth = 1; depth <= 8; depth++) {
		if (backend_start(which, depth) != 0)
			return; /* no io_uring here: the plain run covers it */
		for (i = 0; i < BACKEND_HINT_SLOTS + 2; i++) {
			snprintf(name, sizeof(name), "f%u", i);
			make_file(name, MiB);
			h[i] = reader(name);
			/* Past the end: not cached, so a hint goes out. */
			readahead_on_read(h[i], 0, 256 * 1024);
		}
		fd = open("f0", O_RDWR);
		ck_assert_int_ge(fd, 0);
		memset(&op, 0, sizeof(op));
		op.opcode = IO_FSYNC;
		op.fd = fd;
		ck_assert_int_eq(io_sync(&op), 0);
		close(fd);
		while (backend->in_flight() > 0)
			ck_assert_int_ge(io_reap_ready(), 0);
		handle_close_all();
		backend->shutdown();
	}
}

START_TEST(test_fsync_beside_hints_plain)
{
	fsync_beside_hints(BACKEND_PLAIN);
}
END_TEST

START_TEST(test_fsync_beside_hints_uring)
{
	fsync_beside_hints(BACKEND_URING);
}
END_TEST

/* A back end that keeps what it is given, to look at the hint later. */
static struct io_op *held;

static int hold_init(unsigned depth)
{
	(void)depth;
	return 0;
}

static int hold_submit(struct io_op *op)
{
	if (held != NULL)
		return -EBUSY;
	held = op;
	return 0;
}

static int hold_flush(void)
{
	return 0;
}

static int hold_fd(void)
{
	return -1;
}

static int hold_reap(struct io_op **done, int max, int wait)
{
	(void)done;
	(void)max;
	(void)wait;
	return 0;
}

static unsigned hold_in_flight(void)
{
	return held != NULL;
}

static void hold_shutdown(void)
{
}

static const struct io_backend hold_backend = {
    "hold",    hold_init,      hold_submit, hold_flush, hold_fd,
    hold_reap, hold_in_flight, NULL,        NULL,       hold_shutdown,
};

START_TEST(test_hint_after_close_keeps_its_file)
{
	struct handle *h;
	struct stat first, mine;
	struct io_op *op;
	int fd, num, other;

	make_file("a", MiB);
	make_file("b", MiB);
	backend = &hold_backend;
	held = NULL;
	h = reader("a");
	ck_assert_int_eq(fstat(h->fd, &first), 0);
	num = h->fd;
	readahead_on_read(h, 0, 256 * 1024);
	ck_assert_ptr_nonnull(held);
	op = held;
	ck_assert_int_eq(op->opcode, IO_READAHEAD);
	/* CLOSE, then an OPEN that gets the same number. */
	handle_close_all();
	other = open("b", O_RDONLY);
	ck_assert_int_eq(other, num);
	/* The hint still names a, whatever runs it now. */
	fd = op->fd;
	ck_assert_int_ne(fd, num);
	ck_assert_int_eq(fstat(fd, &mine), 0);
	ck_assert_int_eq(mine.st_ino, first.st_ino);
	ck_assert_int_eq(mine.st_dev, first.st_dev);
	/* Done: its own descriptor is closed, b's is left alone. */
	op->result = 0;
	op->done(op);
	held = NULL;
	ck_assert_int_eq(fcntl(fd, F_GETFD), -1);
	ck_assert_int_ge(fcntl(other, F_GETFD), 0);
	close(other);
	backend = &plain_backend;
}
END_TEST

START_TEST(test_pagecache_counts_every_page_the_range_touches)
{
	/* Nothing to read: nothing to wait for. */
	ck_assert(readahead_all_cached(5000, 0, 0, 4096));
	/* One page, aligned or not. */
	ck_assert(readahead_all_cached(0, 4096, 1, 4096));
	ck_assert(readahead_all_cached(100, 10, 1, 4096));
	ck_assert(!readahead_all_cached(0, 4096, 0, 4096));
	/* An unaligned 8 KiB spans three pages. */
	ck_assert(!readahead_all_cached(100, 8192, 2, 4096));
	ck_assert(readahead_all_cached(100, 8192, 3, 4096));
	/* 255 KiB at a page boundary: 64 pages (63.75 rounded up). */
	ck_assert(!readahead_all_cached(4096, 261120, 63, 4096));
	ck_assert(readahead_all_cached(4096, 261120, 64, 4096));
}
END_TEST

#define KiB 1024
#define BIG (255 * KiB)

START_TEST(test_waiting_read_continuing_the_stream)
{
	uint64_t until = 0, from, n;

	/* A fresh stream: READs from its start are its continuation, hinted
	 * in steps of 2 MiB or more. */
	ck_assert_int_eq(readahead_queued_plan(0, &until, 0, BIG, &from, &n),
	                 READAHEAD_LATER);
	ck_assert_uint_eq(until, 0);
	ck_assert_int_eq(
	    readahead_queued_plan(0, &until, 0, 9 * BIG, &from, &n),
	    READAHEAD_HINT);
	ck_assert_uint_eq(from, 0);
	ck_assert_uint_eq(n, 9 * BIG);
	ck_assert_uint_eq(until, 9 * BIG);
	/* Inside the window asked for already: nothing, ever. */
	until = 4 * MiB;
	ck_assert_int_eq(
	    readahead_queued_plan(MiB, &until, 2 * MiB, BIG, &from, &n),
	    READAHEAD_NONE);
	ck_assert_uint_eq(until, 4 * MiB);
	/* Across its end: the part beyond, once it is a step. */
	ck_assert_int_eq(
	    readahead_queued_plan(MiB, &until, 3 * MiB, 2 * MiB, &from, &n),
	    READAHEAD_LATER);
	ck_assert_int_eq(
	    readahead_queued_plan(MiB, &until, 3 * MiB, 3 * MiB, &from, &n),
	    READAHEAD_HINT);
	ck_assert_uint_eq(from, 4 * MiB);
	ck_assert_uint_eq(n, 2 * MiB);
	ck_assert_uint_eq(until, 6 * MiB);
}
END_TEST

START_TEST(test_waiting_read_ahead_is_bounded)
{
	uint64_t until = 28 * MiB, from, n;

	/* At most 32 MiB ahead of where the stream is. */
	ck_assert_int_eq(
	    readahead_queued_plan(0, &until, until, 8 * MiB, &from, &n),
	    READAHEAD_HINT);
	ck_assert_uint_eq(from, 28 * MiB);
	ck_assert_uint_eq(n, 4 * MiB);
	ck_assert_uint_eq(until, 32 * MiB);
	ck_assert_int_eq(
	    readahead_queued_plan(0, &until, 32 * MiB, 8 * MiB, &from, &n),
	    READAHEAD_NONE);
	ck_assert_uint_eq(until, 32 * MiB);
	/* Once the stream moved on, further: a step at a time. */
	ck_assert_int_eq(
	    readahead_queued_plan(MiB, &until, 32 * MiB, 8 * MiB, &from, &n),
	    READAHEAD_LATER);
	ck_assert_int_eq(readahead_queued_plan(3 * MiB, &until, 32 * MiB,
	                                       8 * MiB, &from, &n),
	                 READAHEAD_HINT);
	ck_assert_uint_eq(from, 32 * MiB);
	ck_assert_uint_eq(n, 3 * MiB);
}
END_TEST

START_TEST(test_waiting_read_elsewhere_gets_none)
{
	uint64_t until = MiB, from, n;

	/* Random READs: no hint; the stream keeps its place. */
	ck_assert_int_eq(
	    readahead_queued_plan(MiB, &until, 100 * MiB, 32 * KiB, &from, &n),
	    READAHEAD_NONE);
	ck_assert_uint_eq(until, MiB);
	/* Behind the stream. */
	ck_assert_int_eq(
	    readahead_queued_plan(MiB, &until, 0, 32 * MiB, &from, &n),
	    READAHEAD_NONE);
	/* Beyond its window, not adjacent. */
	ck_assert_int_eq(
	    readahead_queued_plan(MiB, &until, MiB + 1, 8 * MiB, &from, &n),
	    READAHEAD_NONE);
	ck_assert_uint_eq(until, MiB);
	/* Nothing, or a range past the end of offsets. */
	ck_assert_int_eq(readahead_queued_plan(0, &until, 5, 0, &from, &n),
	                 READAHEAD_NONE);
	ck_assert_int_eq(readahead_queued_plan(0, &until, UINT64_MAX - 5,
	                                       8 * MiB, &from, &n),
	                 READAHEAD_NONE);
}
END_TEST

START_TEST(test_waiting_reads_hinted_on_block_file_systems)
{
	ck_assert(readahead_fs_hints_waiting(0xef53));      /* ext4 */
	ck_assert(readahead_fs_hints_waiting(0x58465342));  /* xfs */
	ck_assert(readahead_fs_hints_waiting(0x9123683e));  /* btrfs */
	ck_assert(!readahead_fs_hints_waiting(0x65735546)); /* FUSE */
	ck_assert(!readahead_fs_hints_waiting(0x01021994)); /* tmpfs */
	ck_assert(!readahead_fs_hints_waiting(0x6969));     /* NFS */
	ck_assert(!readahead_fs_hints_waiting(0));          /* unknown */
}
END_TEST

/* A back end that records what it is given, up to room ops at once. */
static struct io_op *kept[16];
static unsigned num_kept, room;

static int keep_submit(struct io_op *op)
{
	if (num_kept == room)
		return -EBUSY;
	kept[num_kept++] = op;
	return 0;
}

static unsigned keep_in_flight(void)
{
	return num_kept;
}

static const struct io_backend keep_backend = {
    "keep",    hold_init,      keep_submit, hold_flush, hold_fd,
    hold_reap, keep_in_flight, NULL,        NULL,       hold_shutdown,
};

/* Finish every recorded hint (closing their descriptors). */
static void finish_kept(void)
{
	unsigned i;

	for (i = 0; i < num_kept; i++) {
		kept[i]->result = 0;
		kept[i]->done(kept[i]);
	}
	num_kept = 0;
}

/* A READ of len bytes at off on handle idx, admitted, not started. */
static struct request *waiting_read(int idx, uint64_t off, uint32_t len)
{
	uint8_t body[4 + 4 + 4 + 8 + 4], *p = body;
	struct request *req;
	uint8_t packet[1 + sizeof(body)];

	memset(body, 0, 4); /* the id */
	p += 4;
	poke_u32(p, 4);
	poke_u32(p + 4, (uint32_t)idx);
	poke_u32(p + 8, (uint32_t)(off >> 32));
	poke_u32(p + 12, (uint32_t)off);
	poke_u32(p + 16, len);
	packet[0] = SSH2_FXP_READ;
	memcpy(packet + 1, body, sizeof(body));
	req = request_new(packet, sizeof(packet), 4096, NULL);
	ck_assert_ptr_nonnull(req);
	req->state = REQ_WAITING;
	return req;
}

static int handle_index(const struct handle *h)
{
	int i;

	for (i = 0; i < 64; i++)
		if (handle_get(i, HANDLE_FILE) == h)
			return i;
	ck_abort();
	return -1;
}

/* Append k adjacent READs of BIG on handle idx from off to all[] (*num so
 * far), each linked after the one before. */
static void add_reads(struct request **all, int *num, int idx, uint64_t off,
                      int k)
{
	int i;

	for (i = 0; i < k; i++) {
		all[*num] = waiting_read(idx, off + (uint64_t)i * BIG, BIG);
		if (*num > 0)
			all[*num - 1]->next = all[*num];
		++*num;
	}
}

static void free_reads(struct request **all, int num)
{
	int i;

	for (i = 0; i < num; i++)
		request_free(all[i]);
}

START_TEST(test_waiting_reads_one_hint_per_run)
{
	struct request *r[64];
	struct handle *a, *fuse;
	int n = 0, i, ia, ifuse;

	/* Empty: no page of them is cached, every hint goes out. */
	make_file("a", 0);
	make_file("c", 0);
	backend = &keep_backend;
	room = 16;
	num_kept = 0;
	a = reader("a");
	fuse = reader("c");
	fuse->hint_waiting = readahead_fs_hints_waiting(0x65735546);
	ia = handle_index(a);
	ifuse = handle_index(fuse);
	/* 9 READs of a's stream (2.24 MiB), one elsewhere in a (none), 9 on
	 * FUSE (none), the stream's next 9, one on FUSE, and the stream's
	 * next one (less than a step: later). */
	add_reads(r, &n, ia, 0, 9);
	r[n] = waiting_read(ia, 100 * MiB, 32 * KiB);
	r[n - 1]->next = r[n];
	n++;
	add_reads(r, &n, ifuse, 0, 9);
	add_reads(r, &n, ia, 9 * BIG, 9);
	add_reads(r, &n, ifuse, 9 * BIG, 1);
	add_reads(r, &n, ia, 18 * BIG, 1);
	/* 1: the last is left for a later turn. */
	ck_assert_int_eq(read_hint_waiting(r[0]), 1);
	ck_assert_uint_eq(num_kept, 2);
	ck_assert_uint_eq(kept[0]->offset, 0);
	ck_assert_uint_eq(kept[0]->len, 9 * BIG);
	ck_assert_uint_eq(kept[1]->offset, 9 * BIG);
	ck_assert_uint_eq(kept[1]->len, 9 * BIG);
	for (i = 0; i < n - 1; i++)
		ck_assert(r[i]->ahead_hinted);
	ck_assert(!r[n - 1]->ahead_hinted);
	/* Once is enough; the last waits for more. */
	finish_kept();
	ck_assert_int_eq(read_hint_waiting(r[0]), 1);
	ck_assert_uint_eq(num_kept, 0);
	ck_assert(!r[n - 1]->ahead_hinted);
	/* Eight more arrive: one hint, from where the stream's stood; then
	 * nothing is left, and a walk says so (0). */
	add_reads(r, &n, ia, 19 * BIG, 8);
	ck_assert_int_eq(read_hint_waiting(r[0]), 0);
	ck_assert_uint_eq(num_kept, 1);
	ck_assert_uint_eq(kept[0]->offset, 18 * BIG);
	ck_assert_uint_eq(kept[0]->len, 9 * BIG);
	for (i = 0; i < n; i++)
		ck_assert(r[i]->ahead_hinted);
	finish_kept();
	free_reads(r, n);
	handle_close_all();
	backend = &plain_backend;
}
END_TEST

START_TEST(test_waiting_read_asked_again_when_no_room)
{
	struct request *r[32];
	struct handle *a, *b;
	int n = 0;

	make_file("a", 0);
	make_file("b", 0);
	backend = &keep_backend;
	room = 1;
	num_kept = 0;
	a = reader("a");
	b = reader("b");
	/* Two streams: three runs, one hint each, room for one at a time. */
	add_reads(r, &n, handle_index(a), 0, 9);
	add_reads(r, &n, handle_index(b), 0, 9);
	add_reads(r, &n, handle_index(a), 9 * BIG, 9);
	/* No room for two runs: they are left for later turns (1). */
	ck_assert_int_eq(read_hint_waiting(r[0]), 1);
	ck_assert_uint_eq(num_kept, 1);
	ck_assert(r[8]->ahead_hinted);
	ck_assert(!r[9]->ahead_hinted);
	ck_assert(!r[18]->ahead_hinted);
	finish_kept();
	ck_assert_int_eq(read_hint_waiting(r[0]), 1);
	ck_assert_uint_eq(num_kept, 1);
	ck_assert_uint_eq(kept[0]->offset, 0); /* b's */
	ck_assert_uint_eq(kept[0]->len, 9 * BIG);
	ck_assert(r[17]->ahead_hinted);
	ck_assert(!r[18]->ahead_hinted);
	finish_kept();
	ck_assert_int_eq(read_hint_waiting(r[0]), 0);
	ck_assert_uint_eq(num_kept, 1);
	ck_assert_uint_eq(kept[0]->offset, 9 * BIG);
	ck_assert_uint_eq(kept[0]->len, 9 * BIG);
	ck_assert(r[26]->ahead_hinted);
	finish_kept();
	free_reads(r, n);
	handle_close_all();
	backend = &plain_backend;
}
END_TEST

/* cachestat refused on one file (EPERM: the user may not write it) says
 * nothing of the next: only ENOSYS (no cachestat in this kernel) holds
 * for every file.  Either way the file is asked with RWF_NOWAIT. */
START_TEST(test_refusal_is_the_files_own)
{
	int all = -1;

	ck_assert_int_eq(readahead_residency_after(EPERM, &all),
	                 RESIDENCY_NOWAIT);
	ck_assert_int_eq(all, 0);
	ck_assert_int_eq(readahead_residency_after(EOPNOTSUPP, &all),
	                 RESIDENCY_NOWAIT);
	ck_assert_int_eq(all, 0);
	ck_assert_int_eq(readahead_residency_after(ENOSYS, &all),
	                 RESIDENCY_NOWAIT);
	ck_assert_int_eq(all, 1);
}
END_TEST

/* overlayfs's cachestat counts its own inode's pages, never the file's:
 * its files are asked with RWF_NOWAIT from the start; every other file
 * system's (FUSE's too, which counts its own pages truly) with cachestat
 * first. */
START_TEST(test_overlayfs_skips_cachestat)
{
	ck_assert_int_eq(readahead_first_way(0x794c7630), RESIDENCY_NOWAIT);
	ck_assert_int_eq(readahead_first_way(0xef53), RESIDENCY_CACHESTAT);
	ck_assert_int_eq(readahead_first_way(0x65735546), RESIDENCY_CACHESTAT);
	ck_assert_int_eq(readahead_first_way(0x01021994), RESIDENCY_CACHESTAT);
	ck_assert_int_eq(readahead_first_way(0), RESIDENCY_CACHESTAT);
}
END_TEST

/* After RWF_NOWAIT found a range not cached, the next ranges are hinted
 * without asking (each miss reads a page apart); a cached one asks the
 * next at once. */
START_TEST(test_cold_ranges_hinted_without_asking)
{
	ck_assert_uint_eq(readahead_nowait_skip(0), READAHEAD_COLD_SKIP);
	ck_assert_uint_gt(READAHEAD_COLD_SKIP, 0);
	ck_assert_uint_eq(readahead_nowait_skip(1), 0);
}
END_TEST

/* RWF_NOWAIT's samples: the first and the last page a range touches,
 * about one a MiB between them, never more than READAHEAD_SAMPLES, each
 * page-aligned, within the range's pages, in order. */
START_TEST(test_samples_span_the_range)
{
	const unsigned long pg = 4096;
	uint64_t at[READAHEAD_SAMPLES];
	static const struct {
		uint64_t off, len;
		unsigned n;
	} c[] = {
	    {0, 2 * MiB, 3},     /* a step: first, middle, last */
	    {0, 1, 1},           /* one page: one sample */
	    {5000, 10000, 2},    /* pages 1 to 3 */
	    {4096, 32 * MiB, 4}, /* the most at once */
	    {0, 4 * MiB, 4},     /* the window */
	    {MiB - 1, 2, 2},     /* two pages, two bytes */
	};
	unsigned i, j, n;

	for (i = 0; i < sizeof(c) / sizeof(c[0]); i++) {
		n = readahead_samples(c[i].off, c[i].len, pg, at);
		ck_assert_uint_eq(n, c[i].n);
		ck_assert_uint_eq(at[0], c[i].off / pg * pg);
		ck_assert_uint_eq(at[n - 1],
		                  (c[i].off + c[i].len - 1) / pg * pg);
		for (j = 1; j < n; j++)
			ck_assert_uint_gt(at[j], at[j - 1]);
		for (j = 0; j < n; j++)
			ck_assert_uint_eq(at[j] % pg, 0);
	}
	ck_assert_uint_eq(readahead_samples(0, 0, pg, at), 0);
	ck_assert_uint_eq(readahead_samples(UINT64_MAX - 10, 20, pg, at), 0);
	/* Evenly: the middle of 2 MiB is at 255 pages. */
	(void)readahead_samples(0, 2 * MiB, pg, at);
	ck_assert_uint_eq(at[1], 255 * pg);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("readahead");
	TCase *tc = tcase_create("readahead");
	SRunner *sr;
	int failed;

	if (mkdtemp(dir) == NULL || chdir(dir) != 0) {
		perror(dir);
		return 1;
	}
	handle_set_limit(64);
	log_init("check_readahead", LOG_LEVEL_ERROR, LOG_AUTH, 1);
	tcase_add_test(tc, test_fsync_beside_hints_plain);
	tcase_add_test(tc, test_fsync_beside_hints_uring);
	tcase_add_test(tc, test_hint_after_close_keeps_its_file);
	tcase_add_test(tc, test_pagecache_counts_every_page_the_range_touches);
	tcase_add_test(tc, test_waiting_read_continuing_the_stream);
	tcase_add_test(tc, test_waiting_read_ahead_is_bounded);
	tcase_add_test(tc, test_waiting_read_elsewhere_gets_none);
	tcase_add_test(tc, test_waiting_reads_hinted_on_block_file_systems);
	tcase_add_test(tc, test_waiting_reads_one_hint_per_run);
	tcase_add_test(tc, test_waiting_read_asked_again_when_no_room);
	tcase_add_test(tc, test_refusal_is_the_files_own);
	tcase_add_test(tc, test_overlayfs_skips_cachestat);
	tcase_add_test(tc, test_samples_span_the_range);
	tcase_add_test(tc, test_cold_ranges_hinted_without_asking);
	suite_add_tcase(s, tc);
	sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed == 0 ? 0 : 1;
}
