/* SPDX-License-Identifier: ISC
 * Copyright (c) 2026 The uring-sftp-server developers.  See LICENSE. */
/* Unit tests of output.c, stdout's owner: what write results mean, the
 * reader leaving, and pacing on a real pipe. */
#include "config.h"

#include <check.h>
#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <signal.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

#include "outpace.h"
#include "output.h"

#define KiB 1024
#define MiB (1024 * 1024)

/* A fake stdout: each write takes at most `room` bytes, or fails with
 * `fail`; the reader has `unread` bytes still to read. */
static size_t room;
static int fail;
static int64_t unread;
static unsigned calls;

static ssize_t fake_writev(const struct iovec *iov, int cnt)
{
	size_t n = 0;
	int i;

	calls++;
	if (fail != 0) {
		errno = fail;
		return -1;
	}
	for (i = 0; i < cnt; i++)
		n += iov[i].iov_len;
	if (room == 0) {
		errno = EAGAIN;
		return -1;
	}
	if (n > room)
		n = room;
	if (unread >= 0)
		unread += (int64_t)n;
	return (ssize_t)n;
}

static unsigned unread_calls;

static int64_t fake_unread(void)
{
	unread_calls++;
	return unread;
}

static const struct output_ops fake_ops = {
    .writev = fake_writev, .unread = fake_unread, .resize = NULL};

static void setup(void)
{
	room = SIZE_MAX;
	fail = 0;
	unread = 0;
	calls = 0;
	unread_calls = 0;
	output_init(&fake_ops, 0);
}

START_TEST(test_write_results)
{
	char buf[100];
	struct iovec iov = {buf, sizeof(buf)};
	size_t moved;

	room = 30;
	ck_assert_int_eq(output_writev(&iov, 1, &moved), OUTPUT_MOVED);
	ck_assert_uint_eq(moved, 30);
	ck_assert_uint_eq(output_total(), 30);
	room = 0;
	ck_assert_int_eq(output_writev(&iov, 1, &moved), OUTPUT_FULL);
	ck_assert_uint_eq(output_total(), 30);
	fail = EIO;
	ck_assert_int_eq(output_writev(&iov, 1, &moved), OUTPUT_FAILED);
	ck_assert_int_eq(errno, EIO);
	ck_assert_int_eq(output_gone(), 0);
}
END_TEST

/* EPIPE: the reader has gone; every later write is dropped without a
 * system call. */
START_TEST(test_reader_leaving)
{
	char buf[100];
	struct iovec iov = {buf, sizeof(buf)};
	size_t moved;

	ck_assert_int_eq(output_writev(&iov, 1, &moved), OUTPUT_MOVED);
	fail = EPIPE;
	ck_assert_int_eq(output_writev(&iov, 1, &moved), OUTPUT_GONE);
	ck_assert_int_eq(output_gone(), 1);
	fail = 0;
	calls = 0;
	ck_assert_int_eq(output_writev(&iov, 1, &moved), OUTPUT_GONE);
	ck_assert_uint_eq(calls, 0);
	ck_assert_uint_eq(output_total(), 100);
	output_init(&fake_ops, 0);
	ck_assert_int_eq(output_gone(), 0);
	output_lost();
	ck_assert_int_eq(output_writev(&iov, 1, &moved), OUTPUT_GONE);
}
END_TEST

/* A pause in progress: the session wakes for completions and input, and
 * neither the wait nor the wake asks the pipe (a FIONREAD that spins on
 * the reader's lock); the end of the pause does. */
START_TEST(test_pause_asks_nothing)
{
	char buf[64 * KiB];
	struct iovec iov = {buf, sizeof(buf)};
	size_t moved;
	int64_t t = 1000000000, wait;
	int i;

	output_init(&fake_ops, MiB);
	for (i = 0; i < 16; i++) /* full */
		ck_assert_int_eq(output_writev(&iov, 1, &moved), OUTPUT_MOVED);
	ck_assert_int_eq(output_pace_wait(t), 0); /* no rate yet */
	unread = 0;                               /* read in 1 ms, refilled */
	for (i = 0; i < 16; i++)
		ck_assert_int_eq(output_writev(&iov, 1, &moved), OUTPUT_MOVED);
	wait = output_pace_wait(t + 1000000);
	ck_assert_int_gt(wait, 100000);
	ck_assert_uint_eq(unread_calls, 2);
	/* Woken early, twice: the pause goes on, unasked. */
	ck_assert_int_eq(output_pace_wait(t + 1000000 + 50000), wait - 50000);
	ck_assert_int_eq(output_pace_woke(t + 1000000 + 60000), 0);
	ck_assert_uint_eq(unread_calls, 2);
	/* Its end: one sample. */
	ck_assert_int_eq(output_pace_woke(t + 1000000 + wait), 1);
	ck_assert_uint_eq(unread_calls, 3);
}
END_TEST

/* Pacing on the real stdout, a pipe: the glue samples it (FIONREAD). */
static uint64_t written;

static int may_use_several_cpus(void)
{
	cpu_set_t set;

	return sched_getaffinity(0, sizeof(set), &set) == 0 &&
	       CPU_COUNT(&set) > 1;
}

static int64_t now(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (int64_t)t.tv_sec * 1000000000 + t.tv_nsec;
}

static void write_all(size_t n)
{
	static char buf[64 * KiB];
	struct iovec iov;
	size_t moved;

	for (; n > 0; n -= moved) {
		iov.iov_base = buf;
		iov.iov_len = n < sizeof(buf) ? n : sizeof(buf);
		ck_assert_int_eq(output_writev(&iov, 1, &moved), OUTPUT_MOVED);
		written += moved;
	}
}

static void read_all(int fd, size_t n)
{
	static char buf[64 * KiB];
	ssize_t r;

	for (; n > 0; n -= (size_t)r) {
		r = read(fd, buf, n < sizeof(buf) ? n : sizeof(buf));
		ck_assert_int_gt(r, 0);
	}
}

/* What output_pace_wait() says for a fast reader, then a slow one. */
static void fast_then_slow_reader(int rd, int size)
{
	int64_t wait = 0;
	int attempt;

	/* A fast reader: the whole pipe read at once, refilled at once.  The
	 * pause is three quarters of the time that took; a few tries, in case
	 * this process was descheduled in between for longer than that. */
	for (attempt = 0; attempt < 5 && wait == 0; attempt++) {
		read_all(rd, (size_t)size);
		write_all((size_t)size);
		wait = output_pace_wait(now());
	}
	if (!may_use_several_cpus()) {
		/* The reader would share our CPU: never paced. */
		ck_assert_int_eq(wait, 0);
		return;
	}
	ck_assert_int_gt(wait, 0);
	ck_assert_int_le(wait, OUTPACE_MAX_WAIT_NS);
	/* Then slow: 4 KiB per 5 ms.  The smoothed rate halves with each
	 * sample, and soon room is awaited instead of a pause. */
	for (attempt = 0; attempt < 8 && wait > 0; attempt++) {
		read_all(rd, 4 * KiB);
		usleep(5000);
		wait = output_pace_wait(now());
	}
	ck_assert_int_eq(wait, 0);
}

START_TEST(test_stdout_pipe_is_measured)
{
	int fds[2], saved = dup(STDOUT_FILENO), size;

	ck_assert_int_eq(pipe(fds), 0);
	size = fcntl(fds[1], F_SETPIPE_SZ, MiB);
	if (size < MiB)
		size = fcntl(fds[1], F_GETPIPE_SZ);
	ck_assert_int_ge(dup2(fds[1], STDOUT_FILENO), 0);
	output_init(&output_stdout_ops, output_stdout_setup());
	write_all((size_t)size);
	ck_assert_int_eq(output_pace_wait(now()), 0); /* first sample */
	/* The reader's progress is seen. */
	ck_assert_int_eq(output_stdout_ops.unread(), size);
	read_all(fds[0], 4 * KiB);
	ck_assert_int_eq(output_stdout_ops.unread(), size - 4 * KiB);
	write_all(4 * KiB); /* a whole page: its pipe slot is free */
	fast_then_slow_reader(fds[0], size);
	/* The reader leaves: the write says so. */
	close(fds[0]);
	ck_assert_int_eq(
	    output_writev(&(struct iovec){"x", 1}, 1, &(size_t){0}),
	    OUTPUT_GONE);
	dup2(saved, STDOUT_FILENO);
	close(saved);
	close(fds[1]);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("output");
	TCase *tc = tcase_create("output");
	SRunner *sr;
	int failed;

	/* A write to a pipe without a reader is EPIPE, not death. */
	signal(SIGPIPE, SIG_IGN);
	tcase_add_checked_fixture(tc, setup, NULL);
	tcase_add_test(tc, test_write_results);
	tcase_add_test(tc, test_reader_leaving);
	tcase_add_test(tc, test_pause_asks_nothing);
	tcase_add_test(tc, test_stdout_pipe_is_measured);
	suite_add_tcase(s, tc);
	sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed == 0 ? 0 : 1;
}
