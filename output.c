/* SPDX-License-Identifier: ISC
 * Copyright (c) 2026 The uring-sftp-server developers.  See LICENSE. */
/* stdout's one owner: see output.h.  The policies (when to pause, what is
 * still in transit) work on what the operation table reports, so a
 * harness with a fake stdout runs this very code. */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <sys/ioctl.h>
#include <sys/sendfile.h>
#include <sys/stat.h>
#include <unistd.h>

#include "outpace.h"
#include "output.h"

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

/* splice(2) needs a pipe at one end: a file goes to a socket stdout
 * through sendfile(2), which moves the same page references. */
static ssize_t stdout_splice(int fd, int64_t off, size_t len)
{
	loff_t pos = off;
	off_t file_pos = (off_t)off;

	if (off < 0)
		return splice(fd, NULL, STDOUT_FILENO, NULL, len,
		              SPLICE_F_MOVE | SPLICE_F_NONBLOCK);
	if (stdout_is_socket)
		return sendfile(STDOUT_FILENO, fd, &file_pos, len);
	return splice(fd, &pos, STDOUT_FILENO, NULL, len, SPLICE_F_NONBLOCK);
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
    .splice = stdout_splice,
    .unread = stdout_unread,
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
	if (S_ISFIFO(st.st_mode) && several_cpus() &&
	    (size = fcntl(STDOUT_FILENO, F_GETPIPE_SZ)) > 0)
		return (size_t)size;
	return 0;
}

int output_stdout_takes_splices(void)
{
	return stdout_is_pipe || stdout_is_socket;
}

/* ------------------------------------------------------------------ */
/* The ledger of spliced data in transit: by file and page range, those
 * are the file's pages until the reader has read up to end (a position
 * in all bytes written).  Ranges of one file that touch are kept as one;
 * more ranges than fit here count as "every file". */
#define TRANSIT_MAX 32
#define PAGE_MASK ((uint64_t)4095)

struct transit {
	dev_t dev;
	ino_t ino;
	uint64_t first, last; /* page-rounded: [first, last) */
	uint64_t end;
};

static struct transit transit[TRANSIT_MAX];
static unsigned num_transit;
static int transit_overflow; /* a range was not recorded: assume all */

void output_init(const struct output_ops *o, size_t pace_capacity)
{
	ops = o;
	out_total = 0;
	gone = 0;
	num_transit = 0;
	transit_overflow = 0;
	pace = (struct outpace){.capacity = pace_capacity};
}

void output_spliced(dev_t dev, ino_t ino, uint64_t off, uint64_t len)
{
	uint64_t first = off & ~PAGE_MASK,
	         last = (off + len + PAGE_MASK) & ~PAGE_MASK;
	struct transit *t;
	unsigned i;

	if (gone)
		return;
	for (i = 0; i < num_transit; i++) {
		t = &transit[i];
		if (t->dev == dev && t->ino == ino && first <= t->last &&
		    t->first <= last)
			break;
	}
	if (i == num_transit) {
		if (num_transit == TRANSIT_MAX) {
			transit_overflow = 1;
			return;
		}
		t = &transit[num_transit++];
		t->dev = dev;
		t->ino = ino;
		t->first = first;
		t->last = last;
	}
	if (first < t->first)
		t->first = first;
	if (last > t->last)
		t->last = last;
	t->end = out_total;
}

/* Unread bytes: what cannot be told counts as nothing read yet. */
static uint64_t unread_now(void)
{
	int64_t n = ops->unread();

	return n < 0 ? out_total : (uint64_t)n;
}

uint64_t output_read_by_reader(void)
{
	uint64_t unread = unread_now();

	return unread < out_total ? out_total - unread : 0;
}

/* Forget what the reader has read by now. */
static void transit_expire(void)
{
	uint64_t unread, consumed;
	unsigned i = 0;

	if (num_transit == 0 && !transit_overflow)
		return;
	unread = unread_now();
	consumed = unread < out_total ? out_total - unread : 0;
	if (unread == 0)
		transit_overflow = 0;
	while (i < num_transit) {
		if (transit[i].end <= consumed)
			transit[i] = transit[--num_transit];
		else
			i++;
	}
}

void output_lost(void)
{
	/* Nobody will read what is in transit: it cannot be seen changing. */
	gone = 1;
	num_transit = 0;
	transit_overflow = 0;
}

int output_gone(void)
{
	return gone;
}

int output_in_transit(void)
{
	transit_expire();
	return num_transit > 0 || transit_overflow;
}

int output_range_in_transit(dev_t dev, ino_t ino, uint64_t start, uint64_t end)
{
	const struct transit *t;
	unsigned i;

	transit_expire();
	if (transit_overflow)
		return 1;
	for (i = 0; i < num_transit; i++) {
		t = &transit[i];
		if (t->dev == dev && t->ino == ino && start < t->last &&
		    t->first < end)
			return 1;
	}
	return 0;
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

int output_splice(int fd, int64_t off, size_t len, size_t *moved)
{
	ssize_t n;

	if (gone)
		return OUTPUT_GONE;
	do {
		n = ops->splice(fd, off, len);
	} while (n == -1 && errno == EINTR);
	if (n == 0 && off >= 0) {
		/* The file ended before the length its header gave: no byte
		 * may be invented, so the session cannot go on. */
		*moved = 0;
		errno = ENODATA;
		return OUTPUT_FAILED;
	}
	return outcome(n, moved);
}

/* ------------------------------------------------------------------ */
/* Pacing glue: outpace.c decides from a sample of the pipe. */

int64_t output_pace_wait(int64_t now_ns)
{
	int64_t unread;

	if (pace.capacity == 0 || gone || (unread = ops->unread()) < 0)
		return 0;
	return outpace_wait(&pace, out_total, (uint64_t)unread, now_ns);
}

int output_pace_woke(int64_t now_ns)
{
	int64_t unread;

	if (pace.capacity == 0 || gone || (unread = ops->unread()) < 0)
		return 1;
	return outpace_woke(&pace, (uint64_t)unread, now_ns);
}
