/* SPDX-License-Identifier: ISC
 * Copyright (c) 2026 The uring-sftp-server developers.  See LICENSE. */
/* Unit tests of stdout pacing: when to sleep instead of waiting for the
 * first free slot of a full pipe. */
#include "config.h"

#include <check.h>
#include <stdlib.h>

#include "outpace.h"

#define KiB 1024
#define MiB (1024 * 1024)
#define MS 1000000 /* ns */

/* A 1 MiB pipe, full at t = 1 s, whose reader took the first MiB. */
static struct outpace full_pipe(void)
{
	struct outpace p = {.capacity = MiB};

	ck_assert_int_eq(outpace_wait(&p, 2 * MiB, MiB, 1000 * (int64_t)MS),
	                 0); /* no rate known yet: wait for room */
	return p;
}

START_TEST(test_not_a_pipe_is_never_paced)
{
	struct outpace p = {.capacity = 0};

	ck_assert_int_eq(outpace_wait(&p, MiB, MiB, MS), 0);
	ck_assert_int_eq(outpace_wait(&p, 2 * MiB, MiB, 2 * MS), 0);
}
END_TEST

START_TEST(test_steady_reader_sets_the_pause)
{
	struct outpace p = full_pipe();
	int64_t wait;

	/* 1 MiB read in 1 ms, refilled to full: sleep until a quarter is
	 * left, 768 KiB at 1 MiB/ms. */
	wait = outpace_wait(&p, 3 * MiB, MiB, 1001 * (int64_t)MS);
	ck_assert_int_ge(wait, 749 * 1000);
	ck_assert_int_le(wait, 751 * 1000);
	/* Half full at the same rate: half as long... */
	wait = outpace_wait(&p, 3 * MiB + 512 * KiB, 512 * KiB,
	                    1002 * (int64_t)MS);
	ck_assert_int_ge(wait, 249 * 1000);
	ck_assert_int_le(wait, 251 * 1000);
	/* ...and no pause once only a quarter is left. */
	ck_assert_int_eq(
	    outpace_wait(&p, 4 * MiB, 256 * KiB, 1003 * (int64_t)MS), 0);
}
END_TEST

/* A pause in progress: what is left of it, then nothing. */
START_TEST(test_pause_left)
{
	struct outpace p = full_pipe();
	int64_t wait;

	ck_assert_int_eq(outpace_pause_left(&p, 1001 * (int64_t)MS), 0);
	wait = outpace_wait(&p, 3 * MiB, MiB, 1001 * (int64_t)MS);
	ck_assert_int_gt(wait, 0);
	ck_assert_int_eq(outpace_pause_left(&p, 1001 * (int64_t)MS), wait);
	ck_assert_int_eq(outpace_pause_left(&p, 1001 * (int64_t)MS + 100000),
	                 wait - 100000);
	ck_assert_int_eq(outpace_pause_left(&p, 1001 * (int64_t)MS + wait), 0);
	ck_assert_int_eq(outpace_woke(&p, 512 * KiB, 1001 * (int64_t)MS + wait),
	                 1);
	ck_assert_int_eq(outpace_pause_left(&p, 1001 * (int64_t)MS), 0);
}
END_TEST

START_TEST(test_slow_reader_is_waited_for)
{
	struct outpace p = full_pipe();

	/* 10 KiB in 1 ms: the pause would be 77 ms; room is awaited. */
	ck_assert_int_eq(
	    outpace_wait(&p, 2 * MiB + 10 * KiB, MiB, 1001 * (int64_t)MS), 0);
}
END_TEST

START_TEST(test_stalled_reader_ends_the_pacing)
{
	struct outpace p = full_pipe();
	int64_t t = 1001 * (int64_t)MS;
	int paused = 0;

	ck_assert_int_gt(outpace_wait(&p, 3 * MiB, MiB, t), 0);
	/* The reader stops: its rate decays, and within a few samples the
	 * pause would exceed the longest one, so room is awaited. */
	for (int i = 0; i < 8; i++) {
		t += MS;
		if (outpace_wait(&p, 3 * MiB, MiB, t) > 0)
			paused++;
	}
	ck_assert_int_lt(paused, 8);
	ck_assert_int_eq(outpace_wait(&p, 3 * MiB, MiB, t + MS), 0);
}
END_TEST

START_TEST(test_pipe_run_dry_shortens_pauses)
{
	struct outpace p = full_pipe();
	int64_t first, second;

	first = outpace_wait(&p, 3 * MiB, MiB, 1001 * (int64_t)MS);
	ck_assert_int_gt(first, 0);
	/* Woken early: the pause goes on, with what is left of it. */
	ck_assert_int_eq(outpace_woke(&p, MiB, 1001 * (int64_t)MS + 100000), 0);
	ck_assert_int_eq(
	    outpace_wait(&p, 3 * MiB, MiB, 1001 * (int64_t)MS + 100000),
	    first - 100000);
	/* It ends with a quarter left, as planned: no change. */
	ck_assert_int_eq(outpace_woke(&p, 256 * KiB, 1002 * (int64_t)MS), 1);
	second = outpace_wait(&p, 4 * MiB, MiB, 1002 * (int64_t)MS);
	ck_assert_int_ge(second, first - 1000);
	ck_assert_int_le(second, first + 1000);
	/* It ends with the pipe empty: the rate doubles, so the next pause is
	 * shorter (the smoothed rate moves half way: two thirds as long). */
	ck_assert_int_eq(outpace_woke(&p, 0, 1003 * (int64_t)MS), 1);
	ck_assert_int_le(outpace_wait(&p, 5 * MiB, MiB, 1003 * (int64_t)MS),
	                 second * 3 / 4);
}
END_TEST

START_TEST(test_old_sample_is_forgotten)
{
	struct outpace p = full_pipe();

	ck_assert_int_gt(outpace_wait(&p, 3 * MiB, MiB, 1001 * (int64_t)MS), 0);
	/* A second later: what the reader did meanwhile says nothing about
	 * its rate now. */
	ck_assert_int_eq(outpace_wait(&p, 40 * MiB, MiB, 2001 * (int64_t)MS),
	                 0);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("outpace");
	TCase *tc = tcase_create("pacing");
	SRunner *sr;
	int failed;

	tcase_add_test(tc, test_not_a_pipe_is_never_paced);
	tcase_add_test(tc, test_steady_reader_sets_the_pause);
	tcase_add_test(tc, test_pause_left);
	tcase_add_test(tc, test_slow_reader_is_waited_for);
	tcase_add_test(tc, test_stalled_reader_ends_the_pacing);
	tcase_add_test(tc, test_pipe_run_dry_shortens_pauses);
	tcase_add_test(tc, test_old_sample_is_forgotten);
	suite_add_tcase(s, tc);
	sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed == 0 ? 0 : 1;
}
