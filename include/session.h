/* SPDX-License-Identifier: ISC
 * Copyright (c) 2026 The uring-sftp-server developers.  See LICENSE. */
/* The event loop's decisions: when to read, frame and admit input, when
 * merged writes may wait, writing replies, what to sleep on, and when the
 * session is over.  The system calls stay with the caller: stdin and
 * stdout are operation tables (input_ops here, output.h), and sleeping
 * (ppoll) is the caller's, told what to wait for by session_plan() and
 * what woke it by session_wake().  main and the fuzzer both run this. */
#ifndef SESSION_H
#define SESSION_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

struct input_ops {
	/* As read(2) from stdin, non-blocking: bytes, 0 at its end, or -1
	 * with errno (EAGAIN: nothing yet). */
	ssize_t (*read)(void *buf, size_t len);
	/* Bytes that can be read now without waiting (FIONREAD); 0 when
	 * none, or when that cannot be told. */
	size_t (*waiting)(void);
	/* 1 when read never waits (a non-blocking pipe or socket): a look
	 * at held input is then the read itself, EAGAIN when nothing waits.
	 * NULL: not known, look with waiting() first. */
	int (*never_blocks)(void);
};

/* The real stdin (fd 0). */
extern const struct input_ops session_stdin_ops;

/* Start a session reading from in.  The queue, back end, input buffer
 * and output must be set up (and, between sessions, reset) by the
 * caller. */
void session_init(const struct input_ops *in);
/* stdout is a pipe of least bytes that may grow to most: the session
 * sizes it to its reader's rate (footprint.h).  Without this call (or
 * with most 0) stdout keeps its size. */
void session_size_stdout(size_t least, size_t most);

enum session_step {
	SESSION_AGAIN, /* something moved: turn again before sleeping */
	SESSION_WAIT,  /* nothing to do now: plan, sleep, wake */
	SESSION_DONE   /* over: see session_exit_status() */
};
/* One turn: frame input, dispatch requests, reap what the back end
 * finished, write replies. */
int session_turn(void);

struct session_wait {
	int input;          /* wait for stdin to be readable */
	int watch_output;   /* watch stdout for its reader leaving */
	int output;         /* ... and for room in it */
	int completion_fd;  /* the back end's: wait for it to be readable, or
	                     * -1 (worker threads wake the sleep with a
	                     * signal: workers.h) */
	int64_t timeout_ns; /* wake after this long at most; -1: no limit */
};
/* What to sleep on, at now_ns. */
void session_plan(struct session_wait *w, int64_t now_ns);

struct session_events {
	int input;        /* stdin is readable (or at its end) */
	int output;       /* stdout has room */
	int output_error; /* stdout's reader has gone (POLLERR, POLLHUP) */
	int timed_out;    /* the timeout passed, nothing else woke us */
};
/* What woke the caller (a signal: all zero), at now_ns. */
void session_wake(const struct session_events *ev, int64_t now_ns);

/* Once the session is over: its exit status, and the message to end
 * with through fatal_exit (NULL: a normal end). */
int session_exit_status(const char **fatal);

/* Rechecks of what nothing announces (stdout's reader catching up,
 * bytes waiting in held-back stdin): first after base_ns, then twice as
 * long each time nothing moved in between, up to SESSION_RECHECK_MAX_NS,
 * so a stalled client costs at most a few wake-ups per second.  prev_ns:
 * the last interval, 0 when there was none. */
#define SESSION_RECHECK_MAX_NS 125000000
int64_t session_backoff(int64_t prev_ns, int moved, int64_t base_ns);

/* While input is held, stdin is looked at (by the turn, which reads what
 * it finds) at most once per SESSION_HELD_LOOK_NS, not at every wake-up:
 * through sshd the session wakes every 32-64 KiB of replies, and a system
 * call costs about a microsecond on a virtual machine.  How long until the
 * next look is due, given the last (looked_ns, 0: never) and now: 0 when
 * it is due now. */
#define SESSION_HELD_LOOK_NS 1000000
int64_t session_held_look_in(int64_t looked_ns, int64_t now_ns);

#endif
