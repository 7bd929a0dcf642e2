/* SPDX-License-Identifier: ISC
 * Copyright (c) 2026 The uring-sftp-server developers.  See LICENSE. */
/* The event loop's decisions; see session.h.  Everything here works on
 * the queue, the input buffer, output.h and the back end, never on a
 * descriptor of its own, so the fuzzer runs exactly what the server
 * runs. */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/ioctl.h>
#include <unistd.h>

#include "backend.h"
#include "io.h"
#include "coalesce.h"
#include "footprint.h"
#include "frame.h"
#include "input.h"
#include "log.h"
#include "output.h"
#include "queue.h"
#include "readmem.h"
#include "server.h"
#include "session.h"
#include "sftp.h"

/* Largest reply we build: a DATA of SFTP_MAX_READ_LENGTH fits well. */
#define MAX_REPLY_PACKET (SFTP_MAX_MSG_LENGTH + 1024)
#define MAX_IOV 64
/* Replies waiting on a full stdout that keep it busy for a while; while
 * they do, stdin is not watched, only looked at now and then. */
#define OUTPUT_BACKLOG (1024 * 1024)
#define HELD_INPUT_RECHECK_NS 10000000
/* Nothing to do for this long: give READ memory's pages back. */
#define READ_MEMORY_IDLE_NS 1000000000
/* READ memory's window at its smallest: what an idle session may keep. */
#define READ_WINDOW_LEAST (64 * 1024)

static ssize_t stdin_read(void *buf, size_t len)
{
	return read(STDIN_FILENO, buf, len);
}

static size_t stdin_waiting(void)
{
	int avail = 0;

	return ioctl(STDIN_FILENO, FIONREAD, &avail) == 0 && avail > 0
	           ? (size_t)avail
	           : 0;
}

/* sftp-server.c makes a pipe or socket stdin non-blocking before the
 * session starts; a terminal or a file stays as it was. */
static int stdin_never_blocks(void)
{
	static int known, never;
	int flags;

	if (!known) {
		flags = fcntl(STDIN_FILENO, F_GETFL);
		never = flags != -1 && (flags & O_NONBLOCK) != 0;
		known = 1;
	}
	return never;
}

const struct input_ops session_stdin_ops = {
    .read = stdin_read,
    .waiting = stdin_waiting,
    .never_blocks = stdin_never_blocks,
};

static const struct input_ops *in;
static int input_eof;          /* stdin returned 0 */
static int input_stop;         /* a framing error: read and frame no more */
static int end_now;            /* an I/O error on stdin or stdout */
static int exit_status;        /* the status once everything is answered */
static const char *exit_fatal; /* logged as fatal before that exit */
static int out_blocked;        /* stdout was full: wait for room */
/* The plan's own state: a pacing pause, an idle timeout, the recheck
 * interval, and what had moved when it was made. */
static int paced, idle;
static int64_t recheck_ns;
static int64_t held_looked_ns; /* the last look at held stdin */
static int64_t clock_ns;       /* the time the last plan or wake-up had */
static uint64_t progress, progress_seen;
/* What the session's downloads may cycle through, and stdout's size. */
static struct footprint footprint;
static size_t stdout_size;

void session_init(const struct input_ops *ops)
{
	in = ops;
	input_eof = input_stop = end_now = 0;
	exit_status = 0;
	exit_fatal = NULL;
	out_blocked = paced = idle = 0;
	recheck_ns = 0;
	held_looked_ns = clock_ns = 0;
	progress = progress_seen = 0;
	session_size_stdout(0, 0);
}

void session_size_stdout(size_t least, size_t most)
{
	footprint_init(&footprint, READ_WINDOW_LEAST, READMEM_BYTES, least,
	               most);
	stdout_size = least;
	readmem_set_window(footprint.readmem.now, footprint.readmem.keep);
}

/* Apply footprint.h's sizes: READ memory's window, stdout's size. */
static void apply_footprint(void)
{
	static size_t window;
	size_t was = stdout_size;

	readmem_set_window(footprint.readmem.now, footprint.readmem.keep);
	if (footprint.pipe.max != 0 && footprint.pipe.now != stdout_size &&
	    !output_gone())
		stdout_size = output_resize(footprint.pipe.now);
	if (stdout_size != was || footprint.readmem.now != window)
		debug2("footprint: READ window %zu KiB, stdout %zu KiB, reader "
		       "%.0f MB/s",
		       footprint.readmem.now / 1024, stdout_size / 1024,
		       footprint.rate * 1000);
	window = footprint.readmem.now;
}

static void stop_input(int status, const char *fatal)
{
	input_stop = 1;
	exit_status = status;
	exit_fatal = fatal;
}

static void stop_now(int status)
{
	end_now = 1;
	exit_status = status;
	exit_fatal = NULL;
}

/* Cut complete packets off the input and admit them, while there is
 * room. */
static void frame_input(void)
{
	struct request *req;

	while (!input_stop && !end_now && queue_has_room()) {
		switch (frame_next(&req, MAX_REPLY_PACKET)) {
		case FRAME_NONE:
			return;
		case FRAME_REQUEST:
			queue_admit(req);
			progress++;
			break;
		case FRAME_TOO_LONG:
			error("bad message from %s local user %s",
			      srv.client_addr, srv.user);
			stop_input(11, NULL);
			return;
		case FRAME_EMPTY:
			stop_input(255, "process: parse: incomplete message");
			return;
		default:
			fatal_exit(255, "frame_input: out of memory");
		}
	}
}

static int complete_packet_waiting(void)
{
	return !input_stop && frame_complete();
}

/* Room to read stdin into (none while every input chunk is held). */
static uint8_t *input_room(size_t *room)
{
	return input_space(room, frame_missing());
}

static void read_input(void)
{
	size_t room;
	uint8_t *buf = input_room(&room);
	ssize_t n;

	if (buf == NULL || input_eof || input_stop || end_now)
		return;
	n = in->read(buf, room);
	if (n > 0) {
		input_added((size_t)n);
		progress++;
	} else if (n == 0) {
		debug("read eof");
		input_eof = 1;
	} else if (errno == ECONNRESET) {
		/* A socketpair's client went away: like end of file. */
		debug("read: %s", errno_text(errno));
		input_eof = 1;
	} else if (errno != EAGAIN && errno != EINTR) {
		error("read: %s", errno_text(errno));
		stop_now(1);
	}
}

static size_t iov_bytes(const struct iovec *iov, int cnt)
{
	size_t len = 0;
	int i;

	for (i = 0; i < cnt; i++)
		len += iov[i].iov_len;
	return len;
}

/* Nobody reads stdout: the replies are dropped as they become ready. */
static void drop_output(void)
{
	struct iovec iov[MAX_IOV];
	int cnt;

	for (;;) {
		queue_output_consumed(0);
		if ((cnt = queue_output_iov(iov, MAX_IOV)) == 0)
			return;
		queue_output_consumed(iov_bytes(iov, cnt));
	}
}

/* Write what replies are ready; 1 if some remain (stdout is full).  Once
 * stdout's reader has gone, the requests already received are still
 * carried out (an upload's last writes land in the file), their replies
 * dropped, until stdin ends too. */
static int write_output(void)
{
	struct iovec iov[MAX_IOV];
	size_t moved;
	int cnt, rc;

	for (;;) {
		if (output_gone()) {
			drop_output();
			return 0;
		}
		queue_output_consumed(0); /* drops requests with no reply */
		if ((cnt = queue_output_iov(iov, MAX_IOV)) == 0)
			return 0;
		rc = output_writev(iov, cnt, &moved);
		if (rc == OUTPUT_MOVED)
			queue_output_consumed(moved);
		switch (rc) {
		case OUTPUT_MOVED:
			progress++;
			/* Part of it: a non-blocking stdout is full now,
			 * and trying again would only return EAGAIN, a
			 * system call for nothing on every wake-up; a
			 * blocking one's write was cut short (a signal,
			 * task work).  Either way: back to the loop, which
			 * reaps what finished, then wait for room. */
			if (moved < iov_bytes(iov, cnt))
				return 1;
			break;
		case OUTPUT_FULL:
			return 1;
		case OUTPUT_GONE:
			debug("write: %s", errno_text(errno));
			break;
		default:
			error("write: %s", errno_text(errno));
			stop_now(1);
			return 0;
		}
	}
}

static int reap_completions(void)
{
	int rc = io_reap_ready();

	if (rc < 0)
		fatal_exit(1, "I/O completion: %s", errno_text(-rc));
	return rc;
}

/* More requests are about to arrive: bytes wait in stdin and we will
 * read and frame them next turn.  Merged writes may wait for those. */
static int more_input_ready(void)
{
	size_t room;

	if (!coalesce_pending() || input_eof || input_stop || end_now ||
	    !queue_has_room() || input_room(&room) == NULL)
		return 0;
	return in->waiting() > 0;
}

/* What stdin gets this turn: nothing (at its end, stopped, or no room
 * to read into), a watch for bytes, or held: while a full stdout still
 * has a backlog of replies, or READs wait for READ memory that only
 * stdout's room will free, new requests could not be answered any
 * sooner, and sleeping until each one arrives (the client sends one per
 * reply it reads) costs a sleep and a wake-up apiece.  Held stdin is
 * only looked at now and then (look_at_held_input); a client blocked
 * writing to us may be waiting for that before it reads what we wrote. */
enum input_state { INPUT_NONE, INPUT_WATCH, INPUT_HELD };

static enum input_state input_state(void)
{
	size_t room;

	if (input_eof || input_stop || end_now || input_room(&room) == NULL)
		return INPUT_NONE;
	if (!out_blocked || output_gone() ||
	    (queue_output_bytes() < OUTPUT_BACKLOG && !readmem_waiting()))
		return INPUT_WATCH;
	return INPUT_HELD;
}

/* A look at held stdin, when one is due (session_held_look_in): bytes
 * waiting are read at once, and 1 says the turn should go round for
 * them.  Looked at here, at the end of a turn, rather than asked of the
 * sleep: a sleep told to watch stdin for bytes already there returned at
 * once, a ppoll for nothing at every look that found some. */
static int look_at_held_input(void)
{
	uint64_t before = progress;

	if (input_state() != INPUT_HELD ||
	    session_held_look_in(held_looked_ns, clock_ns) > 0)
		return 0;
	held_looked_ns = clock_ns;
	/* Where a read cannot wait, it is the look: one call either way,
	 * where a FIONREAD that found bytes was followed by the read. */
	if ((in->never_blocks != NULL && in->never_blocks()) ||
	    in->waiting() > 0)
		read_input();
	return progress != before;
}

static int finished(void)
{
	if (end_now)
		return 1;
	if (!queue_idle())
		return 0;
	if (queue_fatal_status() != 0 || input_stop)
		return 1;
	return input_eof && !complete_packet_waiting();
}

int session_turn(void)
{
	unsigned before;
	int reaped;

	frame_input();
	queue_dispatch(more_input_ready());
	/* What the back end did at once (writes; everything, for the plain
	 * one) is answered this turn. */
	reaped = reap_completions();
	if (reaped > 0)
		progress++;
	/* A full stdout is tried again only once poll says it has room, or
	 * after a paced pause. */
	if (!out_blocked) {
		before = queue_count();
		out_blocked = write_output();
		/* Replies that went out may have made room for input already
		 * read, or unblocked a request: go round before sleeping. */
		if (queue_count() < before && !end_now)
			return SESSION_AGAIN;
	}
	if (finished())
		return SESSION_DONE;
	/* So may completions; but while a stepped request (check-file) goes
	 * on, stdin and stdout are looked at between its steps. */
	if (reaped > 0 && !queue_steps_pending())
		return SESSION_AGAIN;
	return look_at_held_input() ? SESSION_AGAIN : SESSION_WAIT;
}

/* Sleep until stdin is readable?  Not while it is held: then it is
 * looked at by the turn (look_at_held_input), and *held asks the plan
 * for a recheck, since nothing announces bytes that arrive meanwhile. */
static int want_input(int *held)
{
	enum input_state state = input_state();

	*held = state == INPUT_HELD;
	return state == INPUT_WATCH;
}

int64_t session_backoff(int64_t prev_ns, int moved, int64_t base_ns)
{
	if (prev_ns <= 0 || moved || base_ns >= SESSION_RECHECK_MAX_NS)
		return base_ns;
	return prev_ns >= SESSION_RECHECK_MAX_NS / 2 ? SESSION_RECHECK_MAX_NS
	                                             : 2 * prev_ns;
}

int64_t session_held_look_in(int64_t looked_ns, int64_t now_ns)
{
	int64_t since = now_ns - looked_ns;

	if (looked_ns <= 0 || since < 0 || since >= SESSION_HELD_LOOK_NS)
		return 0;
	return SESSION_HELD_LOOK_NS - since;
}

/* Something moved since the last plan: input, replies, completions. */
static int moved_since_plan(void)
{
	int moved = progress != progress_seen;

	progress_seen = progress;
	return moved;
}

void session_plan(struct session_wait *w, int64_t now_ns)
{
	int held, moved = moved_since_plan();
	int64_t wait_ns = -1, pace;

	clock_ns = now_ns;
	/* READs waiting for READ memory while stdout has room: the reader
	 * waits for us. */
	if (footprint_update(&footprint, output_total(),
	                     readmem_waiting() && !out_blocked, now_ns))
		apply_footprint();
	w->input = want_input(&held);
	w->watch_output = !output_gone();
	w->output = 0;
	paced = 0;
	if (held)
		recheck_ns =
		    session_backoff(recheck_ns, moved, HELD_INPUT_RECHECK_NS);
	else
		recheck_ns = 0;
	if (recheck_ns > 0)
		wait_ns = recheck_ns;
	if (out_blocked && !output_gone()) {
		pace = output_pace_wait(now_ns);
		if (pace == 0) {
			w->output = 1;
		} else if (wait_ns < 0 || pace < wait_ns) {
			wait_ns = pace;
			paced = 1;
		}
	}
	if (io_completion_fd(&w->completion_fd) != 0)
		wait_ns = 0;
	/* A stepped request goes on next turn: look, but do not sleep. */
	if (queue_steps_pending())
		wait_ns = 0;
	idle = wait_ns < 0 && queue_idle() && readmem_reclaimable();
	if (idle)
		wait_ns = READ_MEMORY_IDLE_NS;
	w->timeout_ns = wait_ns;
}

void session_wake(const struct session_events *ev, int64_t now_ns)
{
	clock_ns = now_ns;
	if (ev->timed_out && idle) {
		readmem_release_idle();
		footprint_idle(&footprint);
		apply_footprint();
	}
	if (paced && output_pace_woke(now_ns))
		out_blocked = 0;
	if (ev->output_error && !output_gone()) {
		debug("stdout: its reader has gone");
		output_lost();
	}
	if (ev->output || output_gone())
		out_blocked = 0; /* room, or an error to see */
	if (ev->input)
		read_input();
}

int session_exit_status(const char **fatal)
{
	if (!end_now && queue_fatal_status() != 0) {
		*fatal = queue_fatal_message();
		return queue_fatal_status();
	}
	*fatal = exit_fatal;
	return exit_status;
}
