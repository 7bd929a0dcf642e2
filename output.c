/* SPDX-License-Identifier: ISC
 * Copyright (c) 2026 The uring-sftp-server developers.  See LICENSE. */
/* stdout's one owner: see output.h.  The pacing policy works on what the
 * operation table reports, so a harness with a fake stdout runs this very
 * code. */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <unistd.h>

#include "outpace.h"
#include "output.h"
#include "stdio-pipes.h"

static const struct output_ops *ops;
static uint64_t out_total; /* bytes written to stdout so far */
static int gone;           /* its reader left */
static struct outpace pace;

/* ------------------------------------------------------------------ */
/* The real stdout. */

static int stdout_is_socket, stdout_is_pipe;

static ssize_t stdout_writev(const struct iovec *iov, int cnt)
{
	return writev(STDOUT_FILENO, iov, cnt);
}

/* FIONREAD counts a pipe's contents from either end; SIOCOUTQ (TIOCOUTQ)
 * what a socket's peer has not read (in buffer memory, which errs on the
 * side of "not read yet"). */
static int64_t stdout_unread(void)
{
	int n = 0;

	if (!stdout_is_socket && !stdout_is_pipe)
		return -1;
	if (ioctl(STDOUT_FILENO, stdout_is_socket ? TIOCOUTQ : FIONREAD, &n) ==
	        -1 ||
	    n < 0)
		return -1;
	return n;
}

const struct output_ops output_stdout_ops = {
    .writev = stdout_writev,
    .unread = stdout_unread,
    .resize = stdio_stdout_resize,
};

/* May this process run on more than one CPU?  If not, stdout's reader
 * most likely shares ours and runs only while we sleep: a longer sleep
 * only leaves the CPU idle once the reader has drained the pipe. */
static int several_cpus(void)
{
	cpu_set_t set;

	return sched_getaffinity(0, sizeof(set), &set) == 0 &&
	       CPU_COUNT(&set) > 1;
}

size_t output_stdout_setup(void)
{
	struct stat st;
	int size;

	if (fstat(STDOUT_FILENO, &st) == -1)
		return 0;
	stdout_is_socket = S_ISSOCK(st.st_mode);
	stdout_is_pipe = S_ISFIFO(st.st_mode);
	/* sshd as the reader: never paced (stdio-pipes.h). */
	if (S_ISFIFO(st.st_mode) && several_cpus() &&
	    stdio_reader() == STDOUT_READER_LOCAL &&
	    (size = fcntl(STDOUT_FILENO, F_GETPIPE_SZ)) > 0)
		return (size_t)size;
	return 0;
}

void output_init(const struct output_ops *o, size_t pace_capacity)
{
	ops = o;
	out_total = 0;
	gone = 0;
	pace = (struct outpace){.capacity = pace_capacity};
}

void output_lost(void)
{
	gone = 1;
}

int output_gone(void)
{
	return gone;
}

/* ------------------------------------------------------------------ */
/* Writing. */

uint64_t output_total(void)
{
	return out_total;
}

/* What a write's result means.  EPIPE and ECONNRESET (and a 0, which
 * nothing should return) say the reader has gone. */
static int outcome(ssize_t n, size_t *moved)
{
	*moved = 0;
	if (n > 0) {
		out_total += (uint64_t)n;
		*moved = (size_t)n;
		return OUTPUT_MOVED;
	}
	if (n == -1 && errno == EAGAIN)
		return OUTPUT_FULL;
	if (n == 0 || errno == EPIPE || errno == ECONNRESET) {
		output_lost();
		return OUTPUT_GONE;
	}
	return OUTPUT_FAILED;
}

int output_writev(const struct iovec *iov, int cnt, size_t *moved)
{
	ssize_t n;

	if (gone)
		return OUTPUT_GONE;
	do {
		n = ops->writev(iov, cnt);
	} while (n == -1 && errno == EINTR);
	return outcome(n, moved);
}

size_t output_resize(size_t bytes)
{
	size_t size;

	if (ops->resize == NULL || gone || (size = ops->resize(bytes)) == 0)
		return 0;
	if (pace.capacity != 0)
		pace.capacity = size;
	return size;
}

/* ------------------------------------------------------------------ */
/* Pacing glue: outpace.c decides from a sample of the pipe. */

int64_t output_pace_wait(int64_t now_ns)
{
	int64_t unread, left;

	if (pace.capacity == 0 || gone)
		return 0;
	if ((left = outpace_pause_left(&pace, now_ns)) > 0)
		return left; /* woken early: no sample */
	if ((unread = ops->unread()) < 0)
		return 0;
	return outpace_wait(&pace, out_total, (uint64_t)unread, now_ns);
}

int output_pace_woke(int64_t now_ns)
{
	int64_t unread;

	if (pace.capacity == 0 || gone)
		return 1;
	if (outpace_pause_left(&pace, now_ns) > 0)
		return 0; /* woken early: the pause goes on, no sample */
	if ((unread = ops->unread()) < 0)
		return 1;
	return outpace_woke(&pace, (uint64_t)unread, now_ns);
}
