/* SPDX-License-Identifier: ISC
 * Copyright (c) 2026 The uring-sftp-server developers.  See LICENSE. */
/* Unit tests of --nocache: which pages a READ drops (those not cached
 * before it, whole pages, a partial last page left to the READ after it),
 * and the back ends' answer to a file that refuses RWF_DONTCACHE (the
 * call made again without it, and said so). */
#include "config.h"

#include <check.h>
#include <errno.h>
#include <string.h>
#include <syslog.h>
#include <unistd.h>

#include "backend.h"
#include "log.h"
#include "nocache.h"

#define PAGE 4096
#define RUNS 65

static uint64_t runs[RUNS][2];

START_TEST(test_nothing_cached_drops_every_page)
{
	uint64_t none[2] = {0, 0};

	/* Aligned, whole pages: one run. */
	ck_assert_int_eq(
	    nocache_drop_ranges(0, 64 * PAGE, PAGE, none, 0, runs, RUNS), 1);
	ck_assert_uint_eq(runs[0][0], 0);
	ck_assert_uint_eq(runs[0][1], 64 * PAGE);
	/* Nothing read, nothing dropped. */
	ck_assert_int_eq(nocache_drop_ranges(0, 0, PAGE, none, 1, runs, RUNS),
	                 0);
}
END_TEST

START_TEST(test_partial_last_page_left_to_next_read)
{
	uint64_t none[2] = {0, 0};

	/* 255 KiB from 0: 63 whole pages and a quarter page. */
	ck_assert_int_eq(
	    nocache_drop_ranges(0, 261120, PAGE, none, 0, runs, RUNS), 1);
	ck_assert_uint_eq(runs[0][1], 63 * PAGE);
	/* At the end of the file it goes too. */
	ck_assert_int_eq(
	    nocache_drop_ranges(0, 261120, PAGE, none, 1, runs, RUNS), 1);
	ck_assert_uint_eq(runs[0][1], 64 * PAGE);
	/* The next READ starts inside page 63: it drops it, whole. */
	ck_assert_int_eq(
	    nocache_drop_ranges(261120, 261120, PAGE, none, 0, runs, RUNS), 1);
	ck_assert_uint_eq(runs[0][0], 63 * PAGE);
	ck_assert_uint_eq(runs[0][1], (127 - 63) * PAGE);
}
END_TEST

START_TEST(test_cached_before_is_kept)
{
	/* Pages 1, 2 and 5 of 8 were cached: runs 0, 3-4, 6-7. */
	uint64_t some[2] = {(1 << 1) | (1 << 2) | (1 << 5), 0};
	uint64_t all[2] = {~(uint64_t)0, ~(uint64_t)0};

	ck_assert_int_eq(
	    nocache_drop_ranges(8 * PAGE, 8 * PAGE, PAGE, some, 0, runs, RUNS),
	    3);
	ck_assert_uint_eq(runs[0][0], 8 * PAGE);
	ck_assert_uint_eq(runs[0][1], PAGE);
	ck_assert_uint_eq(runs[1][0], 11 * PAGE);
	ck_assert_uint_eq(runs[1][1], 2 * PAGE);
	ck_assert_uint_eq(runs[2][0], 14 * PAGE);
	ck_assert_uint_eq(runs[2][1], 2 * PAGE);
	ck_assert_int_eq(
	    nocache_drop_ranges(0, 64 * PAGE, PAGE, all, 1, runs, RUNS), 0);
	/* A page in the second word (page 70) cached. */
	some[0] = 0;
	some[1] = (uint64_t)1 << 6;
	ck_assert_int_eq(
	    nocache_drop_ranges(0, 80 * PAGE, PAGE, some, 1, runs, RUNS), 2);
	ck_assert_uint_eq(runs[0][1], 70 * PAGE);
	ck_assert_uint_eq(runs[1][0], 71 * PAGE);
}
END_TEST

START_TEST(test_pages_past_the_map_are_kept)
{
	uint64_t none[2] = {0, 0};

	/* 200 pages: the first 128 are known not cached, the rest kept. */
	ck_assert_int_eq(
	    nocache_drop_ranges(0, 200 * PAGE, PAGE, none, 1, runs, RUNS), 1);
	ck_assert_uint_eq(runs[0][1], NOCACHE_READ_PAGES * PAGE);
}
END_TEST

/* A pipe has no page cache: every kernel refuses RWF_DONTCACHE on it
 * (before 6.14 as a flag it does not know). */
static void refused_read(enum backend_choice which)
{
	struct io_op op, *done;
	char buf[16];
	int p[2];

	ck_assert_int_eq(backend_start(which, 4), 0);
	ck_assert_int_eq(pipe(p), 0);
	ck_assert_int_eq(write(p[1], "hello", 5), 5);
	memset(&op, 0, sizeof(op));
	op.opcode = IO_READ;
	op.fd = p[0];
	op.buf = buf;
	op.len = sizeof(buf);
	op.offset = IO_NO_OFFSET;
	op.rw_flags = RWF_DONTCACHE;
	ck_assert_int_eq(backend->submit(&op), 0);
	backend->flush();
	ck_assert_int_eq(backend->reap(&done, 1, 1), 1);
	ck_assert_ptr_eq(done, &op);
	ck_assert_int_eq(op.result, 5);
	ck_assert_int_eq(memcmp(buf, "hello", 5), 0);
	ck_assert_int_eq(op.rw_refused, 1);
	ck_assert_int_eq(op.rw_flags, 0);
	close(p[0]);
	close(p[1]);
	backend->shutdown();
}

START_TEST(test_refused_read_plain)
{
	refused_read(BACKEND_PLAIN);
}
END_TEST

START_TEST(test_refused_read_uring)
{
	refused_read(BACKEND_URING);
}
END_TEST

START_TEST(test_refused_write)
{
	struct io_op op;
	int p[2];
	char buf[8];

	ck_assert_int_eq(pipe(p), 0);
	memset(&op, 0, sizeof(op));
	op.opcode = IO_WRITE;
	op.fd = p[1];
	op.buf = "abc";
	op.len = 3;
	op.offset = IO_NO_OFFSET;
	op.rw_flags = RWF_DONTCACHE;
	ck_assert_int_eq(io_write_now(&op), 3);
	ck_assert_int_eq(op.rw_refused, 1);
	ck_assert_int_eq(read(p[0], buf, sizeof(buf)), 3);
	close(p[0]);
	close(p[1]);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("nocache");
	TCase *tc = tcase_create("nocache");
	SRunner *sr;
	int failed;

	log_init("check_nocache", LOG_LEVEL_ERROR, LOG_AUTH, 1);
	tcase_add_test(tc, test_nothing_cached_drops_every_page);
	tcase_add_test(tc, test_partial_last_page_left_to_next_read);
	tcase_add_test(tc, test_cached_before_is_kept);
	tcase_add_test(tc, test_pages_past_the_map_are_kept);
	tcase_add_test(tc, test_refused_read_plain);
	tcase_add_test(tc, test_refused_read_uring);
	tcase_add_test(tc, test_refused_write);
	suite_add_tcase(s, tc);
	sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed == 0 ? 0 : 1;
}
