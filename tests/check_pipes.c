/* SPDX-License-Identifier: ISC
 * Copyright (c) 2026 The uring-sftp-server developers.  See LICENSE. */
/* Unit tests of the pipe budget: how many pages a session may hold in
 * pipes, the reserve it leaves its user, pipe sizes, and the pool's next
 * step for a READ; then the pool itself on real pipes. */
#include "config.h"

#include <check.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <linux/magic.h>
#include <sys/statfs.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "pagecache.h"
#include "pipes.h"
#include "sftp.h"

#define PAGE 4096UL
/* Linux defaults: fs.pipe-user-pages-soft 16384 (64 MiB), -hard 0 (none),
 * fs.pipe-max-size 1 MiB. */
static const struct pipe_limits defaults = {16384, 0, 256, 0};

START_TEST(test_budget_unlimited_or_exempt_is_what_is_wanted)
{
	struct pipe_limits none = {0, 0, 256, 0}, exempt = defaults;

	exempt.exempt = 1;
	ck_assert_uint_eq(pipe_session_budget(&none, 768, 1), 768);
	ck_assert_uint_eq(pipe_session_budget(&none, 768, 500), 768);
	ck_assert_uint_eq(pipe_session_budget(&exempt, 768, 64), 768);
	ck_assert_uint_eq(pipe_session_budget(&exempt, 100000, 1), 100000);
}
END_TEST

/* What n sessions take, sshd's three default pipes each included. */
static unsigned long user_total(const struct pipe_limits *l, unsigned n)
{
	return n * (pipe_session_budget(l, 768, n) + 48);
}

START_TEST(test_sessions_leave_a_quarter_of_the_quota)
{
	struct pipe_limits small = {4096, 0, 256, 0};
	unsigned n;

	/* Up to 16 sessions: 2.8 MiB each of the default 64 MiB. */
	ck_assert_uint_eq(pipe_session_budget(&defaults, 100000, 1), 720);
	ck_assert_uint_eq(pipe_session_budget(&defaults, 100000, 16), 720);
	/* Less wanted than the share: less taken. */
	ck_assert_uint_eq(pipe_session_budget(&defaults, 500, 1), 500);
	/* More sessions, smaller shares; together never more than three
	 * quarters. */
	ck_assert_uint_eq(pipe_session_budget(&defaults, 768, 64), 144);
	ck_assert_uint_eq(pipe_session_budget(&defaults, 768, 256), 0);
	for (n = 1; n <= 1024; n *= 2) {
		ck_assert_uint_le(user_total(&defaults, n) -
		                      (n > 128 ? 48 * n : 0),
		                  defaults.soft_pages * 3 / 4);
		ck_assert_uint_le(user_total(&small, n) - (n > 32 ? 48 * n : 0),
		                  small.soft_pages * 3 / 4);
	}
	ck_assert_uint_gt(pipe_session_budget(&small, 768, 1), 0);
}
END_TEST

START_TEST(test_the_lower_of_soft_and_hard_counts)
{
	struct pipe_limits hard_only = {0, 8192, 256, 0},
	                   hard_lower = {16384, 4096, 256, 0},
	                   soft_lower = {4096, 16384, 256, 0};

	ck_assert_uint_eq(pipe_session_budget(&hard_only, 100000, 1),
	                  8192 / 4 * 3 / 16 - 48);
	ck_assert_uint_eq(pipe_session_budget(&hard_lower, 100000, 1),
	                  4096 / 4 * 3 / 16 - 48);
	ck_assert_uint_eq(pipe_session_budget(&soft_lower, 100000, 1),
	                  4096 / 4 * 3 / 16 - 48);
}
END_TEST

START_TEST(test_reserve_is_one_largest_pipe)
{
	struct pipe_limits small = {1024, 0, 256, 0}, none = {0, 0, 256, 0},
	                   exempt = defaults;

	exempt.exempt = 1;
	ck_assert_uint_eq(pipe_reserve_pages(&defaults), 256);
	ck_assert_uint_eq(pipe_reserve_pages(&small), 64);
	ck_assert_uint_eq(pipe_reserve_pages(&none), 0);
	ck_assert_uint_eq(pipe_reserve_pages(&exempt), 0);
}
END_TEST

START_TEST(test_pipe_holds_any_read_of_its_length)
{
	ck_assert_uint_eq(pipe_slots_for(1, PAGE), 16);
	ck_assert_uint_eq(pipe_slots_for(32 * 1024, PAGE), 16);
	ck_assert_uint_eq(pipe_slots_for(60 * 1024, PAGE), 16);
	ck_assert_uint_eq(pipe_slots_for(60 * 1024 + 1, PAGE), 32);
	ck_assert_uint_eq(pipe_slots_for(64 * 1024, PAGE), 32);
	/* 255 KiB spans 65 pages unaligned. */
	ck_assert_uint_eq(pipe_slots_for(SFTP_MAX_READ_LENGTH, PAGE), 128);
	ck_assert_uint_eq(pipe_slots_for(252 * 1024, PAGE), 64);
	ck_assert_uint_eq(pipe_slots_for(SFTP_MAX_READ_LENGTH, 65536), 16);
}
END_TEST

START_TEST(test_stdio_grows_as_far_as_the_budget_allows)
{
	/* 2.8 MiB: stdin to 256 KiB (64 pages, from 16), keeping room for
	 * stdout's growth and one 128-page pipe; stdout to 1 MiB. */
	ck_assert_uint_eq(pipe_stdio_size(720, 0, 16, 64, 240 + 128), 64);
	ck_assert_uint_eq(pipe_stdio_size(720, 48, 16, 256, 128), 256);
	/* 144 pages (64 sessions): no room for stdin; stdout 128 KiB. */
	ck_assert_uint_eq(pipe_stdio_size(144, 0, 16, 64, 240 + 128), 0);
	ck_assert_uint_eq(pipe_stdio_size(144, 0, 16, 256, 128), 32);
	/* None when nothing is left, or it is that big already. */
	ck_assert_uint_eq(pipe_stdio_size(0, 0, 16, 256, 128), 0);
	ck_assert_uint_eq(pipe_stdio_size(720, 0, 256, 256, 128), 0);
	ck_assert_uint_eq(pipe_stdio_size(720, 0, 512, 256, 128), 0);
	/* Sizes are powers of two; want rounds down. */
	ck_assert_uint_eq(pipe_stdio_size(720, 0, 16, 200, 0), 128);
}
END_TEST

/* A pool of 480 pages (3 MiB less stdio), 64 pipes at most, none yet. */
static struct pipe_pool_state empty_pool(void)
{
	struct pipe_pool_state s = {.budget = 480,
	                            .max_slots = 256,
	                            .max_pipes = 64,
	                            .max_copy_bytes = 2 << 20,
	                            .read_len = 32768,
	                            .can_make = 1};
	return s;
}

START_TEST(test_step_spare_then_make)
{
	struct pipe_pool_state s = empty_pool();

	ck_assert_int_eq(pipe_next_step(&s, 128), PIPE_STEP_MAKE);
	s.held = 128;
	s.pipes = s.spares = 1;
	s.largest_spare = 128;
	ck_assert_int_eq(pipe_next_step(&s, 128), PIPE_STEP_SPARE);
	ck_assert_int_eq(pipe_next_step(&s, 16), PIPE_STEP_SPARE);
}
END_TEST

START_TEST(test_step_waits_once_the_budget_is_lent_out)
{
	struct pipe_pool_state s = empty_pool();

	s.held = 384; /* three large pipes lent out */
	s.pipes = s.busy = 3;
	ck_assert_int_eq(pipe_next_step(&s, 128), PIPE_STEP_WAIT);
	/* A small one still fits beside them. */
	ck_assert_int_eq(pipe_next_step(&s, 16), PIPE_STEP_MAKE);
	/* At the most pipes kept: wait too. */
	s.held = 128;
	s.pipes = s.max_pipes;
	ck_assert_int_eq(pipe_next_step(&s, 16), PIPE_STEP_WAIT);
}
END_TEST

START_TEST(test_step_trades_small_spares_for_a_large_pipe)
{
	struct pipe_pool_state s = empty_pool();

	s.held = 480; /* 30 small pipes, all spare */
	s.pipes = s.spares = 30;
	s.largest_spare = 16;
	ck_assert_int_eq(pipe_next_step(&s, 128), PIPE_STEP_DROP_SPARE);
	/* At the limit, no trade: what is spare stays; nothing is lent, so
	 * nothing comes back: copy. */
	s.can_make = 0;
	ck_assert_int_eq(pipe_next_step(&s, 128), PIPE_STEP_COPY);
}
END_TEST

START_TEST(test_step_gives_back_past_a_shrunk_budget)
{
	struct pipe_pool_state s = empty_pool();

	s.budget = 96; /* more sessions now */
	s.held = 256;
	s.pipes = 2;
	s.spares = s.busy = 1;
	s.largest_spare = 128;
	ck_assert_int_eq(pipe_next_step(&s, 128), PIPE_STEP_DROP_SPARE);
	s.held = 128;
	s.pipes = 1;
	s.spares = 0;
	s.largest_spare = 0;
	ck_assert_int_eq(pipe_next_step(&s, 128), PIPE_STEP_WAIT);
	ck_assert_int_eq(pipe_next_step(&s, 16), PIPE_STEP_WAIT);
}
END_TEST

START_TEST(test_step_at_the_limit_waits_for_its_own_or_copies)
{
	struct pipe_pool_state s = empty_pool();

	s.can_make = 0;
	ck_assert_int_eq(pipe_next_step(&s, 16), PIPE_STEP_COPY);
	s.held = 128;
	s.pipes = s.busy = 1;
	ck_assert_int_eq(pipe_next_step(&s, 128), PIPE_STEP_WAIT);
	ck_assert_int_eq(pipe_next_step(&s, 16), PIPE_STEP_WAIT);
}
END_TEST

START_TEST(test_step_copies_a_few_at_a_time)
{
	struct pipe_pool_state s = empty_pool();

	s.budget = 0;
	s.read_len = 261120;
	s.copy_bytes = 7 * 261120;
	ck_assert_int_eq(pipe_next_step(&s, 128), PIPE_STEP_COPY);
	/* Their buffers are memory: the next waits for one to end. */
	s.copy_bytes = 8 * 261120;
	ck_assert_int_eq(pipe_next_step(&s, 128), PIPE_STEP_WAIT);
	/* Small READs: more of them in the same memory. */
	s.read_len = 32768;
	s.copy_bytes = 63 * 32768;
	ck_assert_int_eq(pipe_next_step(&s, 16), PIPE_STEP_COPY);
	s.copy_bytes = 64 * 32768;
	ck_assert_int_eq(pipe_next_step(&s, 16), PIPE_STEP_WAIT);
}
END_TEST

/* Bytes the disk must give are copied rather than wait for a pipe of
 * ours (within the same memory bound); cached ones wait. */
START_TEST(test_step_copies_from_disk_rather_than_wait)
{
	struct pipe_pool_state s = empty_pool();

	s.held = s.budget;
	s.pipes = s.busy = 30; /* all lent out */
	ck_assert_int_eq(pipe_next_step(&s, 16), PIPE_STEP_WAIT);
	s.from_disk = 1;
	ck_assert_int_eq(pipe_next_step(&s, 16), PIPE_STEP_COPY);
	s.copy_bytes = 64 * 32768;
	ck_assert_int_eq(pipe_next_step(&s, 16), PIPE_STEP_WAIT);
	/* A pipe to be had still comes first. */
	s = empty_pool();
	s.from_disk = 1;
	ck_assert_int_eq(pipe_next_step(&s, 16), PIPE_STEP_MAKE);
}
END_TEST

START_TEST(test_step_copies_what_no_pipe_of_ours_could_hold)
{
	struct pipe_pool_state s = empty_pool();

	s.budget = 100; /* less than one large pipe */
	ck_assert_int_eq(pipe_next_step(&s, 128), PIPE_STEP_COPY);
	ck_assert_int_eq(pipe_next_step(&s, 16), PIPE_STEP_MAKE);
	s.budget = 0;
	ck_assert_int_eq(pipe_next_step(&s, 16), PIPE_STEP_COPY);
	/* Larger than fs.pipe-max-size allows us. */
	s = empty_pool();
	s.max_slots = 64;
	ck_assert_int_eq(pipe_next_step(&s, 128), PIPE_STEP_COPY);
}
END_TEST

/* The pool on real pipes: every pipe lent holds its READ, and the pool
 * never holds more than its budget; once that is lent out, READs wait. */
START_TEST(test_pagecache_counts_every_page_the_range_touches)
{
	/* Nothing to read: nothing to wait for. */
	ck_assert(pagecache_all_cached(5000, 0, 0, 4096));
	/* One page, aligned or not. */
	ck_assert(pagecache_all_cached(0, 4096, 1, 4096));
	ck_assert(pagecache_all_cached(100, 10, 1, 4096));
	ck_assert(!pagecache_all_cached(0, 4096, 0, 4096));
	/* An unaligned 8 KiB spans three pages. */
	ck_assert(!pagecache_all_cached(100, 8192, 2, 4096));
	ck_assert(pagecache_all_cached(100, 8192, 3, 4096));
	/* 255 KiB at a page boundary: 64 pages (63.75 rounded up). */
	ck_assert(!pagecache_all_cached(4096, 261120, 63, 4096));
	ck_assert(pagecache_all_cached(4096, 261120, 64, 4096));
}
END_TEST

/* On a real file: what was just written is cached, clipped at the end;
 * what was dropped from the cache is not.  A kernel without cachestat(2)
 * can tell nothing. */
START_TEST(test_pagecache_resident_on_a_real_file)
{
	char path[] = "check_pipes.XXXXXX"; /* the build tree: not tmpfs */
	static char data[65536];
	int fd = mkstemp(path), works;
	struct statfs fs;
	uint64_t range[2] = {0, 4096}, stat[5];

	ck_assert_int_ge(fd, 0);
	unlink(path);
	memset(data, 'x', sizeof(data));
	ck_assert_int_eq(write(fd, data, sizeof(data)), sizeof(data));
	works = syscall(451, fd, range, stat, 0) == 0;
	if (!works) {
		ck_assert_int_eq(pagecache_resident(fd, 65536, 0, 4096),
		                 PAGECACHE_UNKNOWN);
		ck_assert_int_eq(pagecache_holds(fd, 0, 4096), -1);
		close(fd);
		return;
	}
	ck_assert_int_eq(pagecache_resident(fd, 65536, 0, 65536), 65536);
	ck_assert_int_eq(pagecache_holds(fd, 0, 65536), 1);
	ck_assert_int_eq(pagecache_holds(fd, 0, 65537), 0); /* past the end */
	ck_assert_int_eq(pagecache_resident(fd, 65536, 1000, 4096), 4096);
	ck_assert_int_eq(pagecache_resident(fd, 65536, 60000, 261120), 5536);
	ck_assert_int_eq(pagecache_resident(fd, 65536, 65536, 4096), 0);
	ck_assert_int_eq(pagecache_resident(fd, 65536, 1 << 30, 4096), 0);
	/* Written back, then dropped: nothing of it is cached (tmpfs pages
	 * cannot be dropped: there the file stays cached). */
	ck_assert_int_eq(fstatfs(fd, &fs), 0);
	if (fs.f_type == TMPFS_MAGIC) {
		close(fd);
		return;
	}
	ck_assert_int_eq(fsync(fd), 0);
	ck_assert_int_eq(posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED), 0);
	ck_assert_int_eq(pagecache_resident(fd, 65536, 0, 65536),
	                 PAGECACHE_MISS);
	ck_assert_int_eq(pagecache_resident(fd, 65536, 8192, 100),
	                 PAGECACHE_MISS);
	ck_assert_int_eq(pagecache_holds(fd, 0, 4096), 0);
	/* Read again: cached again. */
	ck_assert_int_eq(pread(fd, data, 8192, 0), 8192);
	ck_assert_int_eq(pagecache_holds(fd, 0, 8192), 1);
	ck_assert_int_eq(pagecache_resident(fd, 65536, 100, 8000), 8000);
	close(fd);
}
END_TEST

START_TEST(test_pool_on_real_pipes)
{
	struct pipe_pair got[64];
	int out[2], n = 0, rc, i;
	long held = 0;

	ck_assert_int_eq(pipe(out), 0);
	ck_assert_int_eq(pipes_init(64), 0);
	while (n < 64 &&
	       (rc = pipe_get(&got[n], SFTP_MAX_READ_LENGTH, 0)) == PIPE_OK) {
		ck_assert_int_ge(fcntl(got[n].wr, F_GETPIPE_SZ),
		                 128 * (int)PAGE);
		held += fcntl(got[n].wr, F_GETPIPE_SZ);
		n++;
	}
	if (n == 0) {
		/* This user's quota is used up by others: nothing to lend. */
		ck_assert_int_eq(rc, PIPE_COPY);
		pipe_copy_done(SFTP_MAX_READ_LENGTH);
		fprintf(stderr, "check_pipes: SKIP the real pool: no pipe to "
		                "be had for this user\n");
		return;
	}
	ck_assert_int_lt(n, 64);
	ck_assert_int_eq(rc, PIPE_WAIT);
	ck_assert_int_le(held, 3 * 1024 * 1024); /* SESSION_PIPE_BYTES */
	/* One back: the next READ gets it. */
	pipe_put(&got[--n], 0);
	ck_assert_int_eq(pipe_get(&got[n], SFTP_MAX_READ_LENGTH, 0), PIPE_OK);
	n++;
	for (i = 0; i < n; i++)
		pipe_put(&got[i], 0);
	/* A spare that fits is lent, whatever its size. */
	ck_assert_int_eq(pipe_get(&got[0], 32 * 1024, 0), PIPE_OK);
	ck_assert_int_ge(fcntl(got[0].wr, F_GETPIPE_SZ), 128 * (int)PAGE);
	pipe_put(&got[0], 0);
	/* Without spares, small READs get small pipes: more of them. */
	pipes_release_spares();
	for (i = 0; i < n + 1; i++) {
		ck_assert_int_eq(pipe_get(&got[i], 32 * 1024, 0), PIPE_OK);
		ck_assert_int_eq(fcntl(got[i].wr, F_GETPIPE_SZ),
		                 16 * (int)PAGE);
	}
	/* A pipe given back with bytes in it is closed, not kept. */
	ck_assert_int_eq(write(got[0].wr, "x", 1), 1);
	pipe_put(&got[0], 1);
	ck_assert_int_eq(fcntl(got[0].wr, F_GETPIPE_SZ), -1);
	for (i = 1; i < n + 1; i++)
		pipe_put(&got[i], 0);
	pipes_release_spares();
	close(out[0]);
	close(out[1]);
}
END_TEST

static Suite *pipes_suite(void)
{
	Suite *s = suite_create("pipes");
	TCase *tc = tcase_create("budget");

	tcase_add_test(tc, test_budget_unlimited_or_exempt_is_what_is_wanted);
	tcase_add_test(tc, test_sessions_leave_a_quarter_of_the_quota);
	tcase_add_test(tc, test_the_lower_of_soft_and_hard_counts);
	tcase_add_test(tc, test_reserve_is_one_largest_pipe);
	tcase_add_test(tc, test_pipe_holds_any_read_of_its_length);
	tcase_add_test(tc, test_stdio_grows_as_far_as_the_budget_allows);
	tcase_add_test(tc, test_step_spare_then_make);
	tcase_add_test(tc, test_step_waits_once_the_budget_is_lent_out);
	tcase_add_test(tc, test_step_trades_small_spares_for_a_large_pipe);
	tcase_add_test(tc, test_step_gives_back_past_a_shrunk_budget);
	tcase_add_test(tc, test_step_at_the_limit_waits_for_its_own_or_copies);
	tcase_add_test(tc, test_step_copies_a_few_at_a_time);
	tcase_add_test(tc, test_step_copies_from_disk_rather_than_wait);
	tcase_add_test(tc, test_step_copies_what_no_pipe_of_ours_could_hold);
	tcase_add_test(tc, test_pagecache_counts_every_page_the_range_touches);
	tcase_add_test(tc, test_pagecache_resident_on_a_real_file);
	tcase_add_test(tc, test_pool_on_real_pipes);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	SRunner *sr = srunner_create(pipes_suite());
	int failed;

	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}
