/* SPDX-License-Identifier: ISC
 * Copyright (c) 2026 The uring-sftp-server developers.  See LICENSE. */
/* The pipe pool.  A READ reply borrows a pipe from its splice into it
 * until its bytes have gone out.  Pipes count against their user's pipe
 * quota (fs.pipe-user-pages-soft, shared by all processes of the user):
 * a session keeps within a budget of pages, and makes no pipe that would
 * leave the user less than a reserve for other programs (doc/design.md,
 * "Pipe budget"). */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "log.h"
#include "monotonic.h"
#include "pipe-quota.h"
#include "pipes.h"
#include "sftp.h"

/* Splice pipes and the stdio pipes of one session, in total: what buys a
 * download its full speed, measured (doc/design.md). */
#define SESSION_PIPE_BYTES (3 * 1024 * 1024)
/* Our stdio pipes grow to these when the budget allows.  sshd reads
 * stdout 32 KiB at a time: a full 1 MiB there means few wake-ups (a
 * 64 KiB one cost a download 5 times the CPU).  For uploads, a 1 MiB
 * stdin took 255 KiB WRITEs to /dev/null at 2.8-3.0 GB/s where 256 KiB
 * gave 1.9-2.4 (and more CPU per GiB), on a quiet machine. */
#define STDOUT_PIPE_BYTES (1024 * 1024)
#define STDIN_PIPE_BYTES (1024 * 1024)
/* A fresh pipe's slots (PIPE_DEF_BUFFERS). */
#define DEFAULT_SLOTS 16
/* What sshd's stdin, stdout and stderr pipes of a session take. */
#define SSHD_PIPE_PAGES (3 * DEFAULT_SLOTS)
/* READ data copied at once when the budget has no pipe for it: the
 * buffers are the session's memory (64 of 255 KiB were 16 MiB of RSS).
 * 8 READs of 255 KiB, 64 of 32 KiB. */
#define MAX_COPY_BYTES (2 * 1024 * 1024)
/* How often the sessions of the user are counted again. */
#define RECOUNT_NS 1000000000
/* At the user's limit: no new pipe before this long. */
#define LIMIT_RETRY_NS 1000000000
/* A spare pipe unused for this long is closed. */
#define SPARE_IDLE_NS 1000000000

struct spare_pipe {
	struct pipe_pair p;
	int64_t since; /* given back then */
};

static struct spare_pipe *spare; /* oldest first */
static unsigned num_spare, num_busy, max_pipes;
static size_t copy_bytes; /* of READs told to copy, not done */
static unsigned long page_size = 4096;
static struct pipe_limits limits;
static int limits_read;
static unsigned long session_budget; /* pages, stdio growth included */
static unsigned long stdio_pages;    /* what our stdio pipes grew by */
static unsigned long stdio_size[2];  /* stdin's, stdout's size if grown */
static unsigned long held_pages;     /* pool pipes made, lent or spare */
static int64_t limit_until;          /* at the user's limit until then */
static int64_t counted_at;           /* sessions last counted then */

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

unsigned long pipe_slots_for(size_t len, unsigned long page)
{
	/* An unaligned READ spans one page more than its length; the kernel
	 * sizes pipes in powers of two. */
	unsigned long need = (unsigned long)((len + page - 1) / page) + 1,
	              slots = DEFAULT_SLOTS;

	while (slots < need)
		slots *= 2;
	return slots;
}

enum pipe_step pipe_next_step(const struct pipe_pool_state *s,
                              unsigned long need)
{
	int fits;

	if (s->held > s->budget && s->spares > 0)
		return PIPE_STEP_DROP_SPARE; /* the budget shrank */
	if (s->largest_spare >= need)
		return PIPE_STEP_SPARE;
	if (s->can_make && need <= s->budget && need <= s->max_slots) {
		if (s->held + need <= s->budget && s->pipes < s->max_pipes)
			return PIPE_STEP_MAKE;
		if (s->spares > 0)
			return PIPE_STEP_DROP_SPARE; /* too small: trade it */
	}
	fits = s->copy_bytes + s->read_len <= s->max_copy_bytes;
	/* Bytes the disk must give: one of our pipes comes back only once
	 * the READs before it have been read from the disk and sent, and
	 * the disk serves a deep queue best (random 32 KiB READs of a cold
	 * file: 64 in flight, not the 17 pipes a 1 MiB budget holds). */
	if (s->from_disk && fits)
		return PIPE_STEP_COPY;
	/* Cached bytes (or who knows): one of ours comes back once its
	 * reply is out, and splicing costs less than copying. */
	if (s->busy > 0 || !fits)
		return PIPE_STEP_WAIT;
	return PIPE_STEP_COPY;
}

/* --- What the kernel says ------------------------------------------------ */

/* The budget for as many sessions as the user runs now (the quota
 * applies only to users without CAP_SYS_RESOURCE). */
static void update_budget(int64_t now)
{
	unsigned sessions = 1;

	counted_at = now;
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
	update_budget(monotonic_ns());
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
		verbose("user's pipe quota nearly used up (%s): READ data "
		        "waits for the pipes held, or is copied",
		        what);
	limit_until = monotonic_ns() + LIMIT_RETRY_NS;
}

void pipes_tune_stdio(int fd)
{
	unsigned long want, keep, old, grown;
	int got;

	read_limits();
	if ((got = fcntl(fd, F_GETPIPE_SZ)) < 0)
		return;
	/* A 1 MiB stdout and one splice pipe moved a download as fast as
	 * 1 MiB and 60 pipes; one pipe and 64 KiB of stdout at a fifth of
	 * the speed: stdout comes first (stdin is tuned first, so it leaves
	 * room for stdout), but leaves room for one pipe. */
	old = (unsigned long)got / page_size;
	keep = pipe_slots_for(SFTP_MAX_READ_LENGTH, page_size);
	want = STDOUT_PIPE_BYTES / page_size;
	if (fd == STDIN_FILENO) {
		keep += want > DEFAULT_SLOTS ? want - DEFAULT_SLOTS : 0;
		want = STDIN_PIPE_BYTES / page_size;
	}
	if (!limits.exempt && want > limits.max_pages)
		want = limits.max_pages;
	grown = pipe_stdio_size(session_budget, stdio_pages, old, want, keep);
	if (grown == 0)
		return;
	if (fcntl(fd, F_SETPIPE_SZ, (int)(grown * page_size)) <
	    (int)(grown * page_size)) {
		at_limit("F_SETPIPE_SZ");
		return;
	}
	if (!reserve_left()) {
		(void)fcntl(fd, F_SETPIPE_SZ, got);
		at_limit("the reserve");
		return;
	}
	stdio_pages += grown - old;
	stdio_size[fd == STDIN_FILENO ? 0 : 1] = grown;
}

/* The budget shrank below what the stdio pipes grew by (more sessions
 * than when they were sized): give back stdin's growth, then as much of
 * stdout's as needed, keeping room for one splice pipe.  The kernel
 * refuses (EBUSY) while a pipe holds more than the smaller size: then
 * this is tried again at the next count.  (Pacing, sized for the larger
 * stdout, then waits for room instead of sleeping.) */
static void shrink_stdio(void)
{
	unsigned long keep = pipe_slots_for(SFTP_MAX_READ_LENGTH, page_size),
	              size;
	int i, fd;

	for (i = 0; i < 2 && stdio_pages + keep > session_budget; i++) {
		if (stdio_size[i] == 0)
			continue;
		fd = i == 0 ? STDIN_FILENO : STDOUT_FILENO;
		size = i == 0
		           ? 0
		           : pipe_stdio_size(
		                 session_budget,
		                 stdio_pages - (stdio_size[i] - DEFAULT_SLOTS),
		                 DEFAULT_SLOTS, stdio_size[i], keep);
		if (size == 0)
			size = DEFAULT_SLOTS;
		if (size >= stdio_size[i] ||
		    fcntl(fd, F_SETPIPE_SZ, (int)(size * page_size)) < 0)
			continue;
		stdio_pages -= stdio_size[i] - size;
		stdio_size[i] = size > DEFAULT_SLOTS ? size : 0;
	}
}

/* --- The pool ------------------------------------------------------------ */

int pipes_init(unsigned max)
{
	read_limits();
	max_pipes = 0;
	if (max == 0 || (spare = calloc(max, sizeof(*spare))) == NULL)
		return -1;
	max_pipes = max;
	return 0;
}

int pipes_splicing(void)
{
	return max_pipes > 0;
}

static void pipe_close(struct pipe_pair *p)
{
	close(p->rd);
	close(p->wr);
	held_pages -= p->slots;
}

/* A new pipe of the given slots, or -1: the kernel gave fewer (the user
 * is at its limit), the reserve would not be left, or no descriptors. */
static int pipe_make(struct pipe_pair *p, unsigned long slots)
{
	int fds[2], got;

	if (pipe2(fds, O_CLOEXEC | O_NONBLOCK) == -1) {
		at_limit("pipe2");
		return -1;
	}
	p->rd = fds[0];
	p->wr = fds[1];
	got = fcntl(fds[1], F_GETPIPE_SZ);
	p->slots = got > 0 ? (unsigned long)got / page_size : 0;
	held_pages += p->slots;
	if (p->slots < DEFAULT_SLOTS) {
		/* Made at the limit: the kernel gives 2 slots. */
		pipe_close(p);
		at_limit("a small pipe");
		return -1;
	}
	if (p->slots < slots) {
		if (fcntl(fds[1], F_SETPIPE_SZ, (int)(slots * page_size)) <
		    (int)(slots * page_size)) {
			pipe_close(p);
			at_limit("F_SETPIPE_SZ");
			return -1;
		}
		held_pages += slots - p->slots;
		p->slots = slots;
	}
	if (!reserve_left()) {
		pipe_close(p);
		at_limit("the reserve");
		return -1;
	}
	return 0;
}

/* Close spares nobody has used for a while: the quota is shared. */
static void drop_idle_spares(int64_t now)
{
	unsigned i, kept = 0;

	for (i = 0; i < num_spare; i++) {
		if (now - spare[i].since >= SPARE_IDLE_NS)
			pipe_close(&spare[i].p);
		else
			spare[kept++] = spare[i];
	}
	num_spare = kept;
}

static struct pipe_pair spare_take(unsigned i)
{
	struct pipe_pair p = spare[i].p;

	num_spare--;
	memmove(&spare[i], &spare[i + 1], (num_spare - i) * sizeof(*spare));
	return p;
}

int pipe_get(struct pipe_pair *p, size_t len, int from_disk)
{
	struct pipe_pool_state s = {.max_pipes = max_pipes,
	                            .max_copy_bytes = MAX_COPY_BYTES,
	                            .read_len = len,
	                            .from_disk = from_disk};
	unsigned long need = pipe_slots_for(len, page_size);
	int64_t now = monotonic_ns();
	unsigned i;

	if (max_pipes == 0) {
		/* No splicing: copies are not limited here. */
		copy_bytes += len;
		return PIPE_COPY;
	}
	drop_idle_spares(now);
	if (now - counted_at >= RECOUNT_NS) {
		update_budget(now); /* sessions come and go */
		shrink_stdio();
	}
	s.budget =
	    session_budget > stdio_pages ? session_budget - stdio_pages : 0;
	s.max_slots = limits.exempt ? ~0UL : limits.max_pages;
	for (;;) {
		s.held = held_pages;
		s.pipes = num_spare + num_busy;
		s.busy = num_busy;
		s.copy_bytes = copy_bytes;
		s.spares = num_spare;
		s.largest_spare = 0;
		for (i = 0; i < num_spare; i++)
			if (spare[i].p.slots > s.largest_spare)
				s.largest_spare = spare[i].p.slots;
		s.can_make = now >= limit_until;
		switch (pipe_next_step(&s, need)) {
		case PIPE_STEP_SPARE:
			/* The newest that fits: the old ones may go idle. */
			for (i = num_spare; spare[--i].p.slots < need;)
				;
			*p = spare_take(i);
			num_busy++;
			return PIPE_OK;
		case PIPE_STEP_MAKE:
			if (pipe_make(p, need) == 0) {
				num_busy++;
				return PIPE_OK;
			}
			now = monotonic_ns(); /* at the limit now */
			continue;
		case PIPE_STEP_DROP_SPARE:
			/* The oldest (none fits, or too many are held). */
			pipe_close(&spare[0].p);
			(void)spare_take(0);
			continue;
		case PIPE_STEP_WAIT:
			return PIPE_WAIT;
		default:
			copy_bytes += len;
			return PIPE_COPY;
		}
	}
}

void pipe_copy_done(size_t len)
{
	copy_bytes -= len;
}

void pipe_put(struct pipe_pair *p, size_t bytes_left)
{
	/* Keep every empty pipe while READs keep coming: making one (pipe2,
	 * F_SETPIPE_SZ, two closes later) cost more than the splices it
	 * serves.  OPEN and OPENDIR take the descriptors back when they run
	 * short (EMFILE), spares unused for a second are closed, and so are
	 * pipes past a budget that shrank as the user's sessions grew. */
	num_busy--;
	if (bytes_left == 0 && num_spare < max_pipes &&
	    held_pages + stdio_pages <= session_budget) {
		spare[num_spare].p = *p;
		spare[num_spare++].since = monotonic_ns();
		return;
	}
	pipe_close(p);
}

int pipes_have_spares(void)
{
	return num_spare > 0;
}

void pipes_release_spares(void)
{
	while (num_spare > 0)
		pipe_close(&spare[--num_spare].p);
}
