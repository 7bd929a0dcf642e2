/* SPDX-License-Identifier: ISC
 * Copyright (c) 2026 The uring-sftp-server developers.  See LICENSE. */
/* Pacing writes into a pipe stdout.  A pipe's writer is woken as soon as
 * one slot is free, so a writer that keeps it full wakes once per read of
 * its reader: sshd reads 32 KiB at a time, and each of our wake-ups (a
 * context switch, a poll, a splice or two) cost more than the data it
 * moved.  Instead, when stdout is full and its reader drains it at a known
 * rate, we sleep until about a quarter of it is left. */
#ifndef OUTPACE_H
#define OUTPACE_H

#include <stddef.h>
#include <stdint.h>

struct outpace {
	size_t capacity;        /* the pipe's size; 0: not a pipe, no pacing */
	uint64_t last_consumed; /* bytes its reader had read at last_ns */
	int64_t last_ns;        /* 0: no sample yet */
	double rate;            /* bytes per ns, smoothed; 0: unknown */
	int64_t pause_until;    /* a pause in progress ends then; 0: none */
};

/* Longest pause: a reader slower than this drains a quarter of the pipe
 * slowly enough that waking at its first read costs little. */
#define OUTPACE_MAX_WAIT_NS 2000000
/* A sample this old says nothing about the current rate. */
#define OUTPACE_STALE_NS 100000000

/* What is left of a pause in progress at now_ns (0: none).  While one
 * is, the session wakes for completions and input but neither decision
 * needs a sample: FIONREAD takes the pipe's lock, which the reader holds
 * while it copies out, so with the reader on the other CPU each sample
 * spun for up to a pipeful's copy (doc/design.md, "Output"). */
int64_t outpace_pause_left(const struct outpace *p, int64_t now_ns);

/* The decision, from a fresh sample: written = all bytes written to the
 * pipe, unread = bytes in it now, at now_ns.  Returns how long to sleep
 * before writing again, or 0 to wait for room (POLLOUT) instead.  While a
 * pause it returned is in progress, returns what is left of it. */
int64_t outpace_wait(struct outpace *p, uint64_t written, uint64_t unread,
                     int64_t now_ns);
/* Woken during a pause, with unread bytes left in the pipe: 1 if the pause
 * is over (write again), 0 if it goes on.  Nearly nothing left at its end
 * means the reader was faster than its rate said (sshd reads in bursts):
 * the rate is doubled, so the pipe does not run dry again. */
int outpace_woke(struct outpace *p, uint64_t unread, int64_t now_ns);

#endif
