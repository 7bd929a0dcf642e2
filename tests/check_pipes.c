/* SPDX-License-Identifier: ISC
 * Copyright (c) 2026 The uring-sftp-server developers.  See LICENSE. */
/* Unit tests of the stdio pipes' budget: how many pages a session may
 * grow its stdin and stdout by, the reserve it leaves its user, the sizes
 * they grow to. */
#include "config.h"

#include <check.h>
#include <stdlib.h>

#include "stdio-pipes.h"

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

	/* Up to 16 sessions: 2.8 MiB each of the default 64 MiB, more than
	 * the 2 MiB stdio pipes want. */
	ck_assert_uint_eq(pipe_session_budget(&defaults, 100000, 1), 720);
	ck_assert_uint_eq(pipe_session_budget(&defaults, 100000, 16), 720);
	ck_assert_uint_eq(pipe_session_budget(&defaults, 512, 16), 512);
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

START_TEST(test_stdio_grows_as_far_as_the_budget_allows)
{
	/* 2 MiB: stdin to 1 MiB (256 pages, from 16), keeping room for
	 * stdout's growth; stdout to 1 MiB. */
	ck_assert_uint_eq(pipe_stdio_size(512, 0, 16, 256, 240), 256);
	ck_assert_uint_eq(pipe_stdio_size(512, 240, 16, 256, 0), 256);
	/* 144 pages (64 sessions): stdin cannot grow and leave room for
	 * stdout's growth, so it keeps its size; stdout to 512 KiB. */
	ck_assert_uint_eq(pipe_stdio_size(144, 0, 16, 256, 240), 0);
	ck_assert_uint_eq(pipe_stdio_size(144, 0, 16, 256, 0), 128);
	/* None when nothing is left, or it is that big already. */
	ck_assert_uint_eq(pipe_stdio_size(0, 0, 16, 256, 128), 0);
	ck_assert_uint_eq(pipe_stdio_size(720, 0, 256, 256, 128), 0);
	ck_assert_uint_eq(pipe_stdio_size(720, 0, 512, 256, 128), 0);
	/* Sizes are powers of two; want rounds down. */
	ck_assert_uint_eq(pipe_stdio_size(720, 0, 16, 200, 0), 128);
}
END_TEST

/* What --check reports a session would get: stdin grown first, leaving
 * room for stdout, as stdio_pipe_grow grows them. */
START_TEST(test_plan_grows_stdin_then_stdout)
{
	struct pipe_limits tight = {1536, 0, 256, 0}, small_max = defaults;
	struct pipe_plan p;

	/* Room for both: 1 MiB each, from a budget of 512 wanted. */
	pipe_stdio_plan(&defaults, 1, 4096, &p);
	ck_assert_uint_eq(p.budget, 512);
	ck_assert_uint_eq(p.stdin_pages, 256);
	ck_assert_uint_eq(p.stdout_pages, 256);
	/* 1536 / 4 * 3 / 16 - 48 = 24 pages: stdin must leave stdout's 240
	 * and stays at 16; stdout grows by 16, to 32. */
	pipe_stdio_plan(&tight, 1, 4096, &p);
	ck_assert_uint_eq(p.budget, 24);
	ck_assert_uint_eq(p.stdin_pages, 16);
	ck_assert_uint_eq(p.stdout_pages, 32);
	/* 256 sessions: no share left, both stay at 16. */
	pipe_stdio_plan(&defaults, 256, 4096, &p);
	ck_assert_uint_eq(p.budget, 0);
	ck_assert_uint_eq(p.stdin_pages, 16);
	ck_assert_uint_eq(p.stdout_pages, 16);
	/* fs.pipe-max-size caps both (not for an exempt user). */
	small_max.max_pages = 64;
	pipe_stdio_plan(&small_max, 1, 4096, &p);
	ck_assert_uint_eq(p.stdin_pages, 64);
	ck_assert_uint_eq(p.stdout_pages, 64);
	ck_assert_uint_eq(p.sshd_stdin_pages, 64);
	small_max.exempt = 1;
	pipe_stdio_plan(&small_max, 1, 4096, &p);
	ck_assert_uint_eq(p.stdin_pages, 256);
	ck_assert_uint_eq(p.stdout_pages, 256);
}
END_TEST

/* Under sshd stdout keeps its size, so stdin, grown first, leaves it
 * nothing: with many sessions of the user stdin still grows, where a
 * local client's stdin keeps its 16 pages for stdout's growth.  (Through
 * sshd a 64 KiB stdin halved an upload's rate: doc/design.md.) */
START_TEST(test_under_sshd_stdin_takes_the_budget)
{
	static const struct pipe_limits tight = {1536, 0, 256, 0};
	/* Sessions, budget, stdin with a local reader, stdin under sshd. */
	static const struct {
		const struct pipe_limits *l;
		unsigned sessions;
		unsigned long budget, local, sshd;
	} cases[] = {
	    {&defaults, 1, 512, 256, 256},
	    {&defaults, 64, 144, 16, 128}, /* stdin to 512 KiB */
	    {&tight, 1, 24, 16, 32},
	    {&defaults, 256, 0, 16, 16}, /* no share left */
	};
	struct pipe_plan p;
	size_t i;

	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		pipe_stdio_plan(cases[i].l, cases[i].sessions, 4096, &p);
		ck_assert_uint_eq(p.budget, cases[i].budget);
		ck_assert_uint_eq(p.stdin_pages, cases[i].local);
		ck_assert_uint_eq(p.sshd_stdin_pages, cases[i].sshd);
	}
}
END_TEST

START_TEST(test_sshd_is_the_reader_when_ssh_connection_is_set)
{
	const char *conn = "10.0.0.2 50000 10.0.0.1 22";

	ck_assert_int_eq(stdout_reader_of(NULL, NULL), STDOUT_READER_LOCAL);
	ck_assert_int_eq(stdout_reader_of("", NULL), STDOUT_READER_LOCAL);
	ck_assert_int_eq(stdout_reader_of(conn, NULL), STDOUT_READER_SSHD);
	/* sftp -D from an interactive ssh login */
	ck_assert_int_eq(stdout_reader_of(conn, "/dev/pts/3"),
	                 STDOUT_READER_LOCAL);
}
END_TEST

/* Blocking writes only where the reader never waits for us to read:
 * sshd; never a local client (it may write before it reads), never a
 * socket (its O_NONBLOCK is stdin's too). */
START_TEST(test_stdout_blocks_only_for_sshd_on_a_pipe)
{
	ck_assert_int_eq(stdout_may_block(STDOUT_READER_SSHD, 1), 1);
	ck_assert_int_eq(stdout_may_block(STDOUT_READER_SSHD, 0), 0);
	ck_assert_int_eq(stdout_may_block(STDOUT_READER_LOCAL, 1), 0);
	ck_assert_int_eq(stdout_may_block(STDOUT_READER_LOCAL, 0), 0);
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
	tcase_add_test(tc, test_stdio_grows_as_far_as_the_budget_allows);
	tcase_add_test(tc, test_plan_grows_stdin_then_stdout);
	tcase_add_test(tc, test_under_sshd_stdin_takes_the_budget);
	tcase_add_test(tc, test_sshd_is_the_reader_when_ssh_connection_is_set);
	tcase_add_test(tc, test_stdout_blocks_only_for_sshd_on_a_pipe);
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
