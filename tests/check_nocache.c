/* SPDX-License-Identifier: ISC
 * Copyright (c) 2026 The uring-sftp-server developers.  See LICENSE. */
/* Unit tests of --nocache: which pages a READ drops (those not cached
 * before the transfer, in whole pages),
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
static int nruns;

static void collect(void *arg, uint64_t off, uint64_t len)
{
	(void)arg;
	ck_assert_int_lt(nruns, RUNS);
	runs[nruns][0] = off;
	runs[nruns][1] = len;
	nruns++;
}

/* The runs to drop of pages [from, to) given map. */
static int drop_runs(const uint8_t *map, uint64_t from, uint64_t to)
{
	nruns = 0;
	nocache_drop_runs(map, from, to, PAGE, collect, NULL);
	return nruns;
}

START_TEST(test_nothing_cached_drops_every_page)
{
	uint8_t none[16] = {0};

	ck_assert_int_eq(drop_runs(none, 0, 64), 1);
	ck_assert_uint_eq(runs[0][0], 0);
	ck_assert_uint_eq(runs[0][1], 64 * PAGE);
	/* From page 3: offsets in bytes from page 0. */
	ck_assert_int_eq(drop_runs(none, 3, 10), 1);
	ck_assert_uint_eq(runs[0][0], 3 * PAGE);
	ck_assert_uint_eq(runs[0][1], 7 * PAGE);
	ck_assert_int_eq(drop_runs(none, 5, 5), 0);
}
END_TEST

START_TEST(test_cached_before_is_kept)
{
	/* Pages 1, 2 and 5 of 8 were cached: runs 0, 3-4, 6-7. */
	uint8_t some[16] = {(1 << 1) | (1 << 2) | (1 << 5)};
	uint8_t all[16];

	memset(all, 0xff, sizeof(all));
	ck_assert_int_eq(drop_runs(some, 0, 8), 3);
	ck_assert_uint_eq(runs[0][0], 0);
	ck_assert_uint_eq(runs[0][1], PAGE);
	ck_assert_uint_eq(runs[1][0], 3 * PAGE);
	ck_assert_uint_eq(runs[1][1], 2 * PAGE);
	ck_assert_uint_eq(runs[2][0], 6 * PAGE);
	ck_assert_uint_eq(runs[2][1], 2 * PAGE);
	ck_assert_int_eq(drop_runs(all, 0, 128), 0);
	/* A page in a later byte (page 70) cached. */
	memset(some, 0, sizeof(some));
	some[8] = 1 << 6;
	ck_assert_int_eq(drop_runs(some, 0, 80), 2);
	ck_assert_uint_eq(runs[0][1], 70 * PAGE);
	ck_assert_uint_eq(runs[1][0], 71 * PAGE);
	ck_assert_uint_eq(runs[1][1], 9 * PAGE);
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

/* mincore of a page past the end of a file (never cached) says resident
 * only where the kernel hides the file's residency: then nothing of a
 * READ's may be dropped on mincore's word. */
START_TEST(test_resident_past_the_end_means_hidden)
{
	ck_assert_int_eq(nocache_mincore_hides(0), 0);
	ck_assert_int_eq(nocache_mincore_hides(1), 1);
	/* Only bit 0 is the answer; the others are reserved. */
	ck_assert_int_eq(nocache_mincore_hides(0xfe), 0);
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
	tcase_add_test(tc, test_cached_before_is_kept);
	tcase_add_test(tc, test_refused_read_plain);
	tcase_add_test(tc, test_refused_read_uring);
	tcase_add_test(tc, test_refused_write);
	tcase_add_test(tc, test_resident_past_the_end_means_hidden);
	suite_add_tcase(s, tc);
	sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed == 0 ? 0 : 1;
}
