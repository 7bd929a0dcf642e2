/* SPDX-License-Identifier: ISC
 * Copyright (c) 2026 The uring-sftp-server developers.  See LICENSE. */
/* Unit tests of read-ahead hints and the back ends' room for them: a
 * hint never takes the slot an fsync or copy-data needs (whatever the
 * queue depth), and a hint still waiting after its handle was closed
 * never reaches another file that got the same descriptor number; and
 * the page-cache decision that skips a hint (every page cached). */
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
#include "log.h"
#include "readahead.h"

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
	readahead_on_open(h);
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
	suite_add_tcase(s, tc);
	sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed == 0 ? 0 : 1;
}
