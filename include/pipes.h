/* SPDX-License-Identifier: ISC
 * Copyright (c) 2026 The uring-sftp-server developers.  See LICENSE. */
/* A pool of private pipes for zero-copy READ replies: file bytes are
 * spliced into a pipe, then from the pipe to stdout behind their header. */
#ifndef PIPES_H
#define PIPES_H

#include <stddef.h>

#include "pipe-quota.h"

struct pipe_pair {
	int rd;
	int wr;
	unsigned long slots; /* its capacity in pages */
};

/* Allow up to max pipes, each sized for the READ it is made for (their
 * data goes to stdout through output.h).  Returns 0, or -1 when out of
 * memory (the pool then stays empty). */
int pipes_init(unsigned max);
/* READ replies may be spliced (the pool was set up). */
int pipes_splicing(void);
/* Grow a stdio pipe of ours (sshd reads and writes it in small pieces)
 * as far as the session's pipe budget allows. */
void pipes_tune_stdio(int fd);

#define PIPE_OK 0    /* *p is an empty pipe that holds len bytes */
#define PIPE_WAIT 1  /* none now; one of ours, or a copy, ends soon */
#define PIPE_COPY -1 /* read into memory instead; pipe_copy_done after */
/* An empty pipe for a READ of len bytes, within the session's budget;
 * from_disk: its bytes are known not to be all in the page cache. */
int pipe_get(struct pipe_pair *p, size_t len, int from_disk);
/* A READ of len bytes told PIPE_COPY has sent its reply (its buffer is
 * free). */
void pipe_copy_done(size_t len);
/* Give a pipe back; one that still holds bytes is closed, not reused. */
void pipe_put(struct pipe_pair *p, size_t bytes_left);
/* Empty pipes are kept for the next READs. */
int pipes_have_spares(void);
/* Close the spare pipes (their descriptors are wanted elsewhere, or the
 * session is idle). */
void pipes_release_spares(void);

/* The budget decisions, pure (tests/check_pipes.c).  Sizes in pages. */
/* Pages one session may hold in pipes (its stdio pipes' growth
 * included), given what it would like to hold and how many sessions of
 * this server the user runs now. */
unsigned long pipe_session_budget(const struct pipe_limits *l,
                                  unsigned long want, unsigned sessions);
/* The size (pages, a power of two up to want) a stdio pipe of old pages
 * may grow to, when the others grew by used and keep pages must stay in
 * the budget (for splice pipes, or stdout); 0: none larger than old. */
unsigned long pipe_stdio_size(unsigned long budget, unsigned long used,
                              unsigned long old, unsigned long want,
                              unsigned long keep);
/* Pages of the user's quota a session leaves free for other programs. */
unsigned long pipe_reserve_pages(const struct pipe_limits *l);
/* Slots (pages) of a pipe that holds any READ of len bytes. */
unsigned long pipe_slots_for(size_t len, unsigned long page_size);

struct pipe_pool_state {
	unsigned long budget;        /* pages the pool may hold */
	unsigned long held;          /* pages in its pipes, lent or spare */
	unsigned long largest_spare; /* slots of the largest spare; 0: none */
	unsigned long max_slots;     /* largest pipe the kernel allows us */
	unsigned pipes, max_pipes;   /* pipes made and kept; the most */
	unsigned busy, spares;       /* lent out; spare */
	size_t copy_bytes;           /* of READs told to copy, not done */
	size_t max_copy_bytes;       /* the most */
	size_t read_len;             /* the READ asking */
	int from_disk;               /* its bytes are not all cached */
	int can_make;                /* not at the user's limit just now */
};
enum pipe_step {
	PIPE_STEP_SPARE,      /* take a spare that fits */
	PIPE_STEP_MAKE,       /* make a new pipe */
	PIPE_STEP_DROP_SPARE, /* close a spare too small, then decide again */
	PIPE_STEP_WAIT,       /* wait for a pipe lent out, or a copy */
	PIPE_STEP_COPY        /* copy this reply */
};
enum pipe_step pipe_next_step(const struct pipe_pool_state *s,
                              unsigned long need);

#endif
