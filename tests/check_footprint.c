/* SPDX-License-Identifier: ISC
 * Copyright (c) 2026 The uring-sftp-server developers.  See LICENSE. */
/* Unit tests of footprint.c: READ memory's window and stdout's size follow
 * the rate its reader drains, grow at once, shrink by halves, and READs
 * waiting for memory while the reader waits widen the window. */
#include "config.h"

#include <check.h>
#include <stdlib.h>

#include "footprint.h"

#define KiB ((size_t)1024)
#define MiB (1024 * KiB)
#define MS ((int64_t)1000000) /* ns */

/* A session's footprint, the bytes written to stdout and the time. */
struct run {
	struct footprint f;
	uint64_t written;
	int64_t t;
};

/* As the server starts one (a 1.5 MiB region from 64 KiB, a pipe of
 * 64 KiB that may grow to pipe_max); first sample at t = 1 s. */
static struct run started_with(size_t pipe_min, size_t pipe_max)
{
	struct run r = {.t = 1000 * MS};

	footprint_init(&r.f, 64 * KiB, 1536 * KiB, pipe_min, pipe_max);
	ck_assert_uint_eq(r.f.readmem.now, 64 * KiB);
	ck_assert_uint_eq(r.f.pipe.now, pipe_min);
	ck_assert_int_eq(footprint_update(&r.f, 0, 0, r.t), 0);
	return r;
}

static struct run started(void)
{
	return started_with(64 * KiB, MiB);
}

/* The reader drains per_ms bytes a millisecond for ms milliseconds,
 * sampled each millisecond; returns the last update's result. */
static int drain(struct run *r, size_t per_ms, int ms, int starved)
{
	int rc = 0, i;

	for (i = 0; i < ms; i++) {
		r->written += per_ms;
		r->t += MS;
		rc = footprint_update(&r->f, r->written, starved, r->t);
	}
	return rc;
}

static void sizes_are(const struct run *r, size_t readmem, size_t pipe)
{
	ck_assert_uint_eq(r->f.readmem.now, readmem);
	ck_assert_uint_eq(r->f.pipe.now, pipe);
}

START_TEST(test_fast_reader_grows_both_at_once)
{
	struct run r = started();

	/* 1 GB/s: 4 MB in the horizon, more than either may hold. */
	drain(&r, MiB, FOOTPRINT_WINDOW_NS / MS, 0);
	sizes_are(&r, 1536 * KiB, MiB);
}
END_TEST

START_TEST(test_size_follows_the_rate)
{
	struct run r = started();

	/* 64 KiB per ms: 256 KiB in the 4 ms horizon, for the pipe; READ
	 * memory, which only refills it, half of that. */
	drain(&r, 64 * KiB, 200, 0);
	sizes_are(&r, 128 * KiB, 256 * KiB);
	/* Four times the rate: four times the size. */
	drain(&r, 256 * KiB, 200, 0);
	sizes_are(&r, 512 * KiB, MiB);
}
END_TEST

/* Where stdout keeps its size (under sshd), READ memory is the only
 * buffer: the whole horizon. */
START_TEST(test_window_is_the_buffer_when_stdout_is_not_sized)
{
	struct run r = started_with(0, 0);

	drain(&r, 64 * KiB, 200, 0);
	ck_assert_uint_eq(r.f.readmem.now, 256 * KiB);
	ck_assert_uint_eq(r.f.pipe.now, 0);
	drain(&r, 256 * KiB, 200, 0);
	ck_assert_uint_eq(r.f.readmem.now, MiB);
}
END_TEST

/* No sample before a window has passed: nothing changes, and the caller
 * is not asked to apply anything. */
START_TEST(test_samples_once_a_window)
{
	struct run r = started();

	ck_assert_int_eq(drain(&r, MiB, FOOTPRINT_WINDOW_NS / MS - 1, 0), 0);
	ck_assert_uint_eq(r.f.pipe.now, 64 * KiB);
	ck_assert_int_eq(drain(&r, MiB, 1, 0), 1);
	ck_assert_uint_eq(r.f.pipe.now, MiB);
}
END_TEST

/* A reader that slows to a trickle: halves once a window, down to the
 * smallest, never in one step. */
START_TEST(test_slow_reader_shrinks_by_halves)
{
	struct run r = started();
	size_t before;
	int windows = 0;

	drain(&r, MiB, 100, 0);
	ck_assert_uint_eq(r.f.pipe.now, MiB);
	while (r.f.pipe.now > 64 * KiB) {
		before = r.f.pipe.now;
		drain(&r, 1, FOOTPRINT_WINDOW_NS / MS, 0);
		ck_assert(r.f.pipe.now == before || r.f.pipe.now == before / 2);
		ck_assert_int_lt(++windows, 40);
	}
	ck_assert_uint_eq(r.f.readmem.now, 64 * KiB);
	/* 1 MiB to 64 KiB is four halvings; the rate's smoothing may take
	 * a window or two before the first. */
	ck_assert_int_ge(windows, 4);
	ck_assert_int_le(windows, 8);
}
END_TEST

/* A rate that wavers about a size leaves it alone: shrinking needs a
 * quarter of the size to be enough. */
START_TEST(test_wavering_rate_keeps_the_size)
{
	struct run r = started();
	int i;

	drain(&r, 64 * KiB, 100, 0); /* 256 KiB */
	ck_assert_uint_eq(r.f.pipe.now, 256 * KiB);
	for (i = 0; i < 20; i++) {
		drain(&r, i % 2 ? 20 * KiB : 64 * KiB, FOOTPRINT_WINDOW_NS / MS,
		      0);
		ck_assert_uint_eq(r.f.pipe.now, 256 * KiB);
	}
}
END_TEST

/* A stalled reader (nothing written for a long sleep): the next sample
 * says so, and the sizes shrink. */
START_TEST(test_stall_then_idle)
{
	struct run r = started();

	drain(&r, MiB, 100, 0);
	ck_assert_uint_eq(r.f.pipe.now, MiB);
	r.t += 5000 * MS;
	ck_assert_int_eq(footprint_update(&r.f, r.written, 0, r.t), 1);
	ck_assert_uint_eq(r.f.pipe.now, 512 * KiB);
	footprint_idle(&r.f);
	sizes_are(&r, 64 * KiB, 64 * KiB);
	/* And back at the reader's pace when it reads again. */
	drain(&r, MiB, 100, 0);
	ck_assert_uint_eq(r.f.pipe.now, MiB);
}
END_TEST

/* READs waiting for memory while the reader waits (cold reads in
 * flight): the window doubles at each sleep, whatever the rate, up to
 * the region, and stays while they wait; the pipe only follows the
 * rate. */
START_TEST(test_starved_reads_widen_the_window)
{
	struct run r = started();

	ck_assert_int_eq(footprint_update(&r.f, r.written, 1, r.t + MS), 1);
	ck_assert_uint_eq(r.f.readmem.now, 128 * KiB);
	drain(&r, 16 * KiB, 4, 1);
	ck_assert_uint_eq(r.f.readmem.now, 1536 * KiB);
	drain(&r, 16 * KiB, 100, 1);
	ck_assert_uint_eq(r.f.readmem.now, 1536 * KiB);
	ck_assert_uint_eq(r.f.pipe.now, 64 * KiB); /* 64 KiB in 4 ms */
	/* No longer starved, and slower: it shrinks again. */
	drain(&r, 4 * KiB, 200, 0);
	ck_assert_uint_eq(r.f.readmem.now, 64 * KiB);
}
END_TEST

/* A window that shrinks keeps its pages for a second (a rate that wavers
 * would fault them in again), then lets them go; idle lets them go at
 * once. */
START_TEST(test_pages_kept_a_second)
{
	struct run r = started();

	drain(&r, MiB, 100, 0);
	ck_assert_uint_eq(r.f.readmem.keep, 1536 * KiB);
	drain(&r, 1, 300, 0);
	ck_assert_uint_eq(r.f.readmem.now, 64 * KiB);
	ck_assert_uint_eq(r.f.readmem.keep, 1536 * KiB);
	drain(&r, 1, 800, 0);
	ck_assert_uint_eq(r.f.readmem.keep, 64 * KiB);
	/* Up again: kept at once; idle: nothing more kept. */
	drain(&r, MiB, 100, 0);
	ck_assert_uint_eq(r.f.readmem.keep, 1536 * KiB);
	footprint_idle(&r.f);
	ck_assert_uint_eq(r.f.readmem.keep, 64 * KiB);
}
END_TEST

/* A stdout that is no pipe (max 0) is never sized. */
START_TEST(test_unsized_pipe)
{
	struct run r = started_with(0, 0);

	drain(&r, MiB, 100, 0);
	sizes_are(&r, 1536 * KiB, 0);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("footprint");
	TCase *tc = tcase_create("core");
	SRunner *sr;
	int failed;

	tcase_add_test(tc, test_fast_reader_grows_both_at_once);
	tcase_add_test(tc, test_size_follows_the_rate);
	tcase_add_test(tc, test_window_is_the_buffer_when_stdout_is_not_sized);
	tcase_add_test(tc, test_samples_once_a_window);
	tcase_add_test(tc, test_slow_reader_shrinks_by_halves);
	tcase_add_test(tc, test_wavering_rate_keeps_the_size);
	tcase_add_test(tc, test_stall_then_idle);
	tcase_add_test(tc, test_starved_reads_widen_the_window);
	tcase_add_test(tc, test_pages_kept_a_second);
	tcase_add_test(tc, test_unsized_pipe);
	suite_add_tcase(s, tc);
	sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}
