/* SPDX-License-Identifier: ISC
 * Copyright (c) 2026 The uring-sftp-server developers.  See LICENSE. */
/* Unit tests of cancelling work whose client has gone: when to look at
 * the pipes, and when what was seen means stop. */
#include "config.h"

#include <check.h>
#include <stdlib.h>
#include <unistd.h>

#include "cancel.h"

#define MS 1000000LL /* ns */

#define MiB (1024 * 1024)
#define MS 1000000LL

/* Each in-kernel copy step takes about CANCEL_STEP_NS, so that a gone
 * client is seen within a second whatever the storage. */
START_TEST(test_steps_sized_by_time)
{
	size_t step = MiB, i;

	/* The page cache: 1 MiB in 0.2 ms; up to the most, 4 times a
	 * step. */
	step = cancel_step_size(step, step, MS / 5, 64 * 1024, 16 * MiB);
	ck_assert_uint_eq(step, 4 * MiB);
	step = cancel_step_size(step, step, MS, 64 * 1024, 16 * MiB);
	ck_assert_uint_eq(step, 16 * MiB);
	step = cancel_step_size(step, step, 4 * MS, 64 * 1024, 16 * MiB);
	ck_assert_uint_eq(step, 16 * MiB);
	/* Storage of 1 ms per call (FUSE): 16 MiB took 0.9 s.  The next
	 * takes CANCEL_STEP_NS at that rate, and stays there. */
	step = cancel_step_size(step, step, 900 * MS, 64 * 1024, 16 * MiB);
	ck_assert_uint_le(step, 16ULL * MiB * CANCEL_STEP_NS / (900 * MS));
	ck_assert_uint_gt(step, 16ULL * MiB * CANCEL_STEP_NS / (900 * MS) -
	                            64 * 1024);
	ck_assert_uint_eq(step % (64 * 1024), 0);
	for (i = 0; i < 5; i++)
		step =
		    cancel_step_size(step, step, 100 * MS, 64 * 1024, 16 * MiB);
	ck_assert_uint_le(step, 2 * MiB);
	ck_assert_uint_ge(step, MiB);
	ck_assert_uint_eq(step % (64 * 1024), 0);
	/* Very slow storage: never below the least. */
	step =
	    cancel_step_size(step, 64 * 1024, 10000 * MS, 64 * 1024, 16 * MiB);
	ck_assert_uint_eq(step, 64 * 1024);
	/* A call that says nothing (nothing moved, no time): asked again. */
	ck_assert_uint_eq(
	    cancel_step_size(3 * MiB, 0, 5 * MS, 64 * 1024, 16 * MiB), 3 * MiB);
	ck_assert_uint_eq(
	    cancel_step_size(3 * MiB, 3 * MiB, 0, 64 * 1024, 16 * MiB),
	    3 * MiB);
}
END_TEST

START_TEST(test_looks_are_spaced)
{
	struct cancel_watch w = {0};

	ck_assert_int_eq(cancel_look_due(&w, 1000 * MS), 1);
	/* Not again before CANCEL_LOOK_EVERY_NS has passed... */
	ck_assert_int_eq(cancel_look_due(&w, 1001 * MS), 0);
	ck_assert_int_eq(
	    cancel_look_due(&w, 1000 * MS + CANCEL_LOOK_EVERY_NS - 1), 0);
	/* ...then once more. */
	ck_assert_int_eq(cancel_look_due(&w, 1000 * MS + CANCEL_LOOK_EVERY_NS),
	                 1);
	ck_assert_int_eq(
	    cancel_look_due(&w, 1000 * MS + CANCEL_LOOK_EVERY_NS + 1), 0);
}
END_TEST

START_TEST(test_present_client_never_stops_work)
{
	struct cancel_watch w = {0};
	int64_t t;

	for (t = 0; t < 3600 * 1000 * MS; t += 997 * MS) {
		if (cancel_look_due(&w, t))
			cancel_saw(&w, CLIENT_HERE, t);
		ck_assert_int_eq(cancel_should_stop(&w, t), 0);
	}
}
END_TEST

START_TEST(test_gone_client_stops_work_at_once)
{
	struct cancel_watch w = {0};

	cancel_saw(&w, CLIENT_GONE, 5000 * MS);
	ck_assert_int_eq(cancel_should_stop(&w, 5000 * MS), 1);
	/* Known for good: no more looks are needed. */
	ck_assert_int_eq(cancel_look_due(&w, 9000 * MS), 0);
	ck_assert_int_eq(cancel_should_stop(&w, 9000 * MS), 1);
}
END_TEST

START_TEST(test_input_end_leaves_a_grace)
{
	struct cancel_watch w = {0};
	int64_t end = 2000 * MS;

	cancel_saw(&w, CLIENT_INPUT_ENDED, end);
	ck_assert_int_eq(cancel_should_stop(&w, end), 0);
	ck_assert_int_eq(
	    cancel_should_stop(&w, end + CANCEL_INPUT_GRACE_NS - 1), 0);
	ck_assert_int_eq(cancel_should_stop(&w, end + CANCEL_INPUT_GRACE_NS),
	                 1);
	/* The grace counts from the first sight, not the latest. */
	cancel_saw(&w, CLIENT_INPUT_ENDED, end + 300 * MS);
	ck_assert_int_eq(cancel_should_stop(&w, end + CANCEL_INPUT_GRACE_NS),
	                 1);
	/* Within a second of stdin's end, whatever the timing of looks. */
	ck_assert_int_le(CANCEL_INPUT_GRACE_NS + CANCEL_LOOK_EVERY_NS,
	                 1000 * MS);
}
END_TEST

START_TEST(test_states_do_not_go_back)
{
	struct cancel_watch w = {0};

	cancel_saw(&w, CLIENT_INPUT_ENDED, 100 * MS);
	cancel_saw(&w, CLIENT_HERE, 200 * MS);
	ck_assert_int_eq(w.seen, CLIENT_INPUT_ENDED);
	/* Gone during the grace: stop now, not when the grace ends. */
	cancel_saw(&w, CLIENT_GONE, 300 * MS);
	ck_assert_int_eq(cancel_should_stop(&w, 300 * MS), 1);
	cancel_saw(&w, CLIENT_INPUT_ENDED, 400 * MS);
	ck_assert_int_eq(w.seen, CLIENT_GONE);
}
END_TEST

/* The mechanism on real pipes put in place of stdin and stdout. */
static int saved_in = -1, saved_out = -1;

static void swap_stdio(int in, int out)
{
	saved_in = dup(0);
	saved_out = dup(1);
	ck_assert(dup2(in, 0) == 0 && dup2(out, 1) == 1);
}

static void restore_stdio(void)
{
	ck_assert(dup2(saved_in, 0) == 0 && dup2(saved_out, 1) == 1);
	close(saved_in);
	close(saved_out);
}

START_TEST(test_pipes_closed_are_seen)
{
	const char *why = NULL;
	int in[2], out[2];

	ck_assert(pipe(in) == 0 && pipe(out) == 0);
	swap_stdio(in[0], out[1]);
	close(in[1]);
	close(out[0]);
	/* Not watching (a unit test's or the fuzzer's own fds): nothing is
	 * ever cancelled. */
	work_cancel_reset();
	ck_assert_int_eq(work_cancelled(&why), 0);
	close(in[0]);
	close(out[1]);
	ck_assert(pipe(in) == 0 && pipe(out) == 0);
	ck_assert(dup2(in[0], 0) == 0 && dup2(out[1], 1) == 1);
	work_cancel_watch_stdio();
	work_cancel_reset();
	ck_assert_int_eq(work_cancelled(&why), 0);
	/* The client closes both ends: its writing end of stdin and its
	 * reading end of stdout. */
	close(in[1]);
	close(out[0]);
	work_cancel_reset();
	ck_assert_int_eq(work_cancelled(&why), 1);
	ck_assert_str_eq(why, "the client has gone");
	restore_stdio();
	close(in[0]);
	close(out[1]);
	work_cancel_reset();
}
END_TEST

START_TEST(test_input_end_alone_is_seen)
{
	const char *why = NULL;
	int in[2], out[2];

	ck_assert(pipe(in) == 0 && pipe(out) == 0);
	swap_stdio(in[0], out[1]);
	close(in[1]);
	work_cancel_watch_stdio();
	work_cancel_reset();
	/* Seen, but within the grace: the work goes on. */
	ck_assert_int_eq(work_cancelled(&why), 0);
	usleep((CANCEL_INPUT_GRACE_NS + CANCEL_LOOK_EVERY_NS) / 1000);
	ck_assert_int_eq(work_cancelled(&why), 1);
	ck_assert_str_eq(why, "the client's input has ended");
	restore_stdio();
	close(in[0]);
	close(out[0]);
	close(out[1]);
	work_cancel_reset();
}
END_TEST

int main(void)
{
	Suite *s = suite_create("cancel");
	TCase *tc = tcase_create("policy");
	TCase *tm = tcase_create("mechanism");
	SRunner *sr;
	int failed;

	tcase_add_test(tc, test_steps_sized_by_time);
	tcase_add_test(tc, test_looks_are_spaced);
	tcase_add_test(tc, test_present_client_never_stops_work);
	tcase_add_test(tc, test_gone_client_stops_work_at_once);
	tcase_add_test(tc, test_input_end_leaves_a_grace);
	tcase_add_test(tc, test_states_do_not_go_back);
	tcase_add_test(tm, test_pipes_closed_are_seen);
	tcase_add_test(tm, test_input_end_alone_is_seen);
	suite_add_tcase(s, tc);
	suite_add_tcase(s, tm);
	sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed == 0 ? 0 : 1;
}
