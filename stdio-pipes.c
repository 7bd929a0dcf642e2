/* SPDX-License-Identifier: ISC
 * Copyright (c) 2026 The uring-sftp-server developers.  See LICENSE. */
/* Growing our stdio pipes within the session's share of the user's pipe
 * quota (fs.pipe-user-pages-soft, shared by all processes of the user),
 * and never so far that the user would have less than a reserve left for
 * other programs (doc/design.md, "Stdio pipes"). */
#include "config.h"

#include <fcntl.h>
#include <sys/ioctl.h>
#include <unistd.h>

#include "log.h"
#include "pipe-quota.h"
#include "stdio-pipes.h"

/* What the stdio pipes of one session may grow to, together. */
#define SESSION_PIPE_BYTES (2 * 1024 * 1024)
/* Our stdio pipes grow to these when the budget allows.  sshd reads
 * stdout 32 KiB at a time: a full 1 MiB there means few wake-ups (a
 * 64 KiB one cost a download 5 times the CPU); stdout grows that far
 * only while its reader's rate asks for it (footprint.h).  For uploads, a 1 MiB
 * stdin took 255 KiB WRITEs to /dev/null at 2.8-3.0 GB/s where 256 KiB
 * gave 1.9-2.4 (and more CPU per GiB), on a quiet machine. */
#define STDOUT_PIPE_BYTES (1024 * 1024)
/* stdout's size at start, and its smallest: a client may send many
 * requests before it reads a reply (OpenSSH's server keeps the replies
 * in its own buffer), and a READ's reply of 64 KiB with a thousand
 * STATUS replies behind it must still fit, or the session stops taking
 * input (tests/hostile.py, eager-writer). */
#define STDOUT_PIPE_LEAST (256 * 1024)
#define STDIN_PIPE_BYTES (1024 * 1024)
/* A fresh pipe's slots (PIPE_DEF_BUFFERS). */
#define DEFAULT_SLOTS 16
/* What sshd's stdin, stdout and stderr pipes of a session take. */
#define SSHD_PIPE_PAGES (3 * DEFAULT_SLOTS)

static unsigned long page_size = 4096;
static struct pipe_limits limits;
static int limits_read;
static unsigned long session_budget; /* pages, stdio growth included */
static unsigned long stdio_pages;    /* what our stdio pipes grew by */
static unsigned long stdout_pages;   /* stdout's size now; 0: no pipe */
static unsigned long stdout_least;   /* ... as we found it */
static unsigned long stdout_most;    /* ... as far as it may grow */
static enum stdout_reader reader = STDOUT_READER_LOCAL;

/* --- The decisions (pure) ------------------------------------------------ */

static unsigned long limit_pages(const struct pipe_limits *l)
{
	if (l->exempt)
		return 0;
	if (l->soft_pages == 0 ||
	    (l->hard_pages != 0 && l->hard_pages < l->soft_pages))
		return l->hard_pages;
	return l->soft_pages;
}

unsigned long pipe_session_budget(const struct pipe_limits *l,
                                  unsigned long want, unsigned sessions)
{
	unsigned long limit = limit_pages(l), share;

	if (limit == 0)
		return want;
	/* Three quarters of the user's quota for its sessions of this
	 * server, sixteen at least (the rest stays with its other programs),
	 * less what sshd's three pipes of each session take. */
	share = limit / 4 * 3 / (sessions > 16 ? sessions : 16);
	share = share > SSHD_PIPE_PAGES ? share - SSHD_PIPE_PAGES : 0;
	return share < want ? share : want;
}

unsigned long pipe_stdio_size(unsigned long budget, unsigned long used,
                              unsigned long old, unsigned long want,
                              unsigned long keep)
{
	unsigned long size = DEFAULT_SLOTS;

	while (size * 2 <= want)
		size *= 2;
	for (; size > old; size /= 2)
		if (used + (size - old) + keep <= budget)
			return size;
	return 0;
}

unsigned long pipe_reserve_pages(const struct pipe_limits *l)
{
	unsigned long limit = limit_pages(l);

	/* Room for one more pipe as large as the user may make one (1 MiB
	 * by default), without going past the limit. */
	if (limit == 0)
		return 0;
	return l->max_pages < limit / 16 ? l->max_pages : limit / 16;
}

/* What a stdio pipe would like to grow to (pages) and, for stdin, grown
 * first, what it must leave of the budget for stdout: what stdout may grow
 * by when a local client reads it; nothing under sshd, where stdout keeps
 * its size and stdin may take the whole budget. */
static void stdio_want(const struct pipe_limits *l, unsigned long page_size,
                       int is_stdin, enum stdout_reader reader,
                       unsigned long *want, unsigned long *keep)
{
	*want = STDOUT_PIPE_BYTES / page_size;
	*keep = 0;
	if (is_stdin) {
		if (reader == STDOUT_READER_LOCAL)
			*keep =
			    *want > DEFAULT_SLOTS ? *want - DEFAULT_SLOTS : 0;
		*want = STDIN_PIPE_BYTES / page_size;
	}
	if (!l->exempt && *want > l->max_pages)
		*want = l->max_pages;
}

void pipe_stdio_plan(const struct pipe_limits *l, unsigned sessions,
                     unsigned long page_size, struct pipe_plan *p)
{
	unsigned long want, keep;

	p->budget =
	    pipe_session_budget(l, SESSION_PIPE_BYTES / page_size, sessions);
	stdio_want(l, page_size, 1, STDOUT_READER_LOCAL, &want, &keep);
	p->stdin_pages =
	    pipe_stdio_size(p->budget, 0, DEFAULT_SLOTS, want, keep);
	if (p->stdin_pages == 0)
		p->stdin_pages = DEFAULT_SLOTS;
	stdio_want(l, page_size, 1, STDOUT_READER_SSHD, &want, &keep);
	p->sshd_stdin_pages =
	    pipe_stdio_size(p->budget, 0, DEFAULT_SLOTS, want, keep);
	if (p->sshd_stdin_pages == 0)
		p->sshd_stdin_pages = DEFAULT_SLOTS;
	stdio_want(l, page_size, 0, STDOUT_READER_LOCAL, &want, &keep);
	p->stdout_pages = pipe_stdio_size(
	    p->budget, p->stdin_pages - DEFAULT_SLOTS, DEFAULT_SLOTS, want, 0);
	if (p->stdout_pages == 0)
		p->stdout_pages = DEFAULT_SLOTS;
}

enum stdout_reader stdout_reader_of(const char *ssh_connection,
                                    const char *ssh_tty)
{
	return ssh_connection != NULL && ssh_connection[0] != '\0' &&
	               ssh_tty == NULL
	           ? STDOUT_READER_SSHD
	           : STDOUT_READER_LOCAL;
}

int stdout_may_block(enum stdout_reader r, int stdout_is_pipe)
{
	return r == STDOUT_READER_SSHD && stdout_is_pipe;
}

/* --- What the kernel says ------------------------------------------------ */

void stdio_set_reader(enum stdout_reader r)
{
	reader = r;
}

enum stdout_reader stdio_reader(void)
{
	return reader;
}

/* The budget for as many sessions as the user runs now (the quota
 * applies only to users without CAP_SYS_RESOURCE). */
static void update_budget(void)
{
	unsigned sessions = 1;

	if (limit_pages(&limits) != 0)
		sessions = pipe_quota_sessions();
	session_budget = pipe_session_budget(
	    &limits, SESSION_PIPE_BYTES / page_size, sessions);
	debug2("pipe budget %lu pages for one of %u sessions", session_budget,
	       sessions);
}

static void read_limits(void)
{
	long ps = sysconf(_SC_PAGESIZE);

	if (limits_read)
		return;
	limits_read = 1;
	if (ps > 0)
		page_size = (unsigned long)ps;
	pipe_quota_read(&limits, page_size);
	update_budget();
	debug("pipe budget %lu pages (user quota %lu soft, %lu hard%s)",
	      session_budget, limits.soft_pages, limits.hard_pages,
	      limits.exempt ? ", exempt" : "");
}

/* After growing a pipe of ours: is there still room for the reserve?  A
 * probe pipe asks for it; the kernel refuses (EPERM) or gives a fresh pipe
 * fewer slots than usual when the user is that close to its limit. */
static int reserve_left(void)
{
	unsigned long reserve = pipe_reserve_pages(&limits);
	int fds[2], ok;

	if (reserve == 0 || limits.exempt)
		return 1;
	if (pipe2(fds, O_CLOEXEC) == -1)
		return 0;
	ok = fcntl(fds[1], F_GETPIPE_SZ) >= (int)(DEFAULT_SLOTS * page_size) &&
	     fcntl(fds[1], F_SETPIPE_SZ, (int)(reserve * page_size)) >= 0;
	close(fds[0]);
	close(fds[1]);
	return ok;
}

static void at_limit(const char *what)
{
	static int said;

	if (!said++)
		verbose("user's pipe quota nearly used up (%s): stdio pipes "
		        "keep their size",
		        what);
}

/* Set a pipe of ours from old to size pages, within the budget and
 * leaving the reserve: 1 when done. */
static int set_size(int fd, unsigned long old, unsigned long size)
{
	if (size > old && stdio_pages + (size - old) > session_budget)
		return 0;
	if (fcntl(fd, F_SETPIPE_SZ, (int)(size * page_size)) <
	    (int)(size * page_size)) {
		if (size > old)
			at_limit("F_SETPIPE_SZ");
		return 0; /* shrinking: its contents do not fit yet */
	}
	if (size > old && !reserve_left()) {
		(void)fcntl(fd, F_SETPIPE_SZ, (int)(old * page_size));
		at_limit("the reserve");
		return 0;
	}
	stdio_pages = stdio_pages + size - old;
	return 1;
}

void stdio_pipe_grow(int fd)
{
	unsigned long want, keep, old, grown;
	int got;

	read_limits();
	if ((got = fcntl(fd, F_GETPIPE_SZ)) < 0)
		return;
	/* stdout comes first: stdin is grown first, so it leaves room for
	 * stdout. */
	old = (unsigned long)got / page_size;
	stdio_want(&limits, page_size, fd == STDIN_FILENO, reader, &want,
	           &keep);
	grown = pipe_stdio_size(session_budget, stdio_pages, old, want, keep);
	if (fd == STDOUT_FILENO && reader == STDOUT_READER_SSHD) {
		/* As sshd made it, for good (stdio-pipes.h). */
		stdout_pages = stdout_least = stdout_most = old;
		debug("stdout: read by sshd, kept at %lu KiB",
		      old * page_size / 1024);
		return;
	}
	if (fd == STDOUT_FILENO) {
		/* To its least now, later as far as its reader's rate asks. */
		stdout_pages = old;
		stdout_most = grown > old ? grown : old;
		stdout_least = STDOUT_PIPE_LEAST / page_size;
		if (stdout_least > stdout_most)
			stdout_least = stdout_most;
		if (stdout_least > old && set_size(fd, old, stdout_least))
			stdout_pages = stdout_least;
		stdout_least = stdout_pages;
		return;
	}
	if (grown != 0)
		(void)set_size(fd, old, grown);
}

size_t stdio_stdout_least(void)
{
	return stdout_least * page_size;
}

size_t stdio_stdout_most(void)
{
	return stdout_most * page_size;
}

size_t stdio_stdout_resize(size_t bytes)
{
	unsigned long size = bytes / page_size;
	int unread = 0;

	if (stdout_pages == 0)
		return 0;
	if (size < stdout_least)
		size = stdout_least;
	if (size > stdout_most)
		size = stdout_most;
	if (size == stdout_pages)
		return stdout_pages * page_size;
	/* A pipe shrinks only when what it holds fits (the kernel says
	 * EBUSY otherwise): asked first, which costs less than the try. */
	if (size < stdout_pages &&
	    (ioctl(STDOUT_FILENO, FIONREAD, &unread) == -1 ||
	     (unsigned long)unread + page_size > size * page_size))
		return stdout_pages * page_size;
	if (set_size(STDOUT_FILENO, stdout_pages, size))
		stdout_pages = size;
	return stdout_pages * page_size;
}
