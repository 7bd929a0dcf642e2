/* SPDX-License-Identifier: ISC
 * Copyright (c) 2026 The uring-sftp-server developers.  See LICENSE. */
/* How much memory a session's downloads may cycle through: the window of
 * READ memory its READs take pieces from (readmem.h) and the size of a
 * pipe stdout (stdio-pipes.h).  Each copy of a warm download writes into
 * one of them and reads back out of it, so every byte of them a session
 * cycles is cache that sixteen or sixty-four sessions share; both are
 * sized to what the reader drains in FOOTPRINT_HORIZON_NS (READ memory to
 * half of it where the pipe is sized too: it only refills the pipe), so
 * that the sessions together cycle about what the machine moves in that
 * time, however many there are.  A fast reader's session grows at once; a
 * session whose reader slows, stalls or goes idle shrinks by half per
 * FOOTPRINT_WINDOW_NS, to the smallest sizes.  READs that wait for READ
 * memory while stdout has room (the reader waits for us: cold reads in
 * flight) double the window, up to its largest.
 *
 * Pure decisions, time passed in (tests/check_footprint.c); session.c
 * samples and applies them. */
#ifndef FOOTPRINT_H
#define FOOTPRINT_H

#include <stddef.h>
#include <stdint.h>

/* Buffered data lasts about this long at the reader's rate: a reader
 * draining a pipe of that size wakes us every few milliseconds at most,
 * which costs nothing next to the copies (doc/design.md, "READ memory"). */
#define FOOTPRINT_HORIZON_NS 4000000
/* The rate is measured over at least this long, and a size halves at
 * most once per window.  Short, so that a download reaches its sizes in
 * its first milliseconds (tests/budget.sh counts a 64 MiB one). */
#define FOOTPRINT_WINDOW_NS 5000000
/* Memory given back (READ memory's pages past the window) only once the
 * size has stayed below it this long: a size that wavers does not
 * fault the same pages in again and again. */
#define FOOTPRINT_KEEP_NS 1000000000
/* A sleep this long makes the rate before it stale. */
#define FOOTPRINT_STALE_NS (4 * FOOTPRINT_WINDOW_NS)

struct footprint_size {
	size_t min, max;   /* bounds (powers of two); max 0: not sized */
	size_t now;        /* the size decided */
	int64_t shrunk_ns; /* when it last halved */
	size_t keep;       /* about the largest size of the last
	                    * FOOTPRINT_KEEP_NS: what may stay in memory */
	int64_t keep_ns;   /* when keep was last set */
};

struct footprint {
	struct footprint_size readmem, pipe;
	uint64_t last_bytes; /* bytes written at last_ns */
	int64_t last_ns;     /* 0: no sample yet */
	double rate;         /* bytes per ns, smoothed */
};

/* Start with both at their smallest. */
void footprint_init(struct footprint *f, size_t readmem_min, size_t readmem_max,
                    size_t pipe_min, size_t pipe_max);
/* A sample at now_ns: written = all bytes written to stdout so far,
 * starved = a READ waits for READ memory while stdout has room.  Updates
 * f->readmem.now and f->pipe.now; 1 when either changed. */
int footprint_update(struct footprint *f, uint64_t written, int starved,
                     int64_t now_ns);
/* Nothing to do for a long while: both at their smallest, and nothing
 * more kept. */
void footprint_idle(struct footprint *f);

#endif
