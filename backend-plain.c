/* SPDX-License-Identifier: ISC
 * Copyright (c) 2026 The uring-sftp-server developers.  See LICENSE. */
/* The plain back end: pread/pwrite/fsync run at submit time; completions
 * wait in a list until reaped, so callers see the same flow as with
 * io_uring. */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <sys/uio.h>
#include <unistd.h>

#include "backend.h"

static struct io_done_list finished;
static unsigned max_depth, hints;

static int plain_init(unsigned depth)
{
	max_depth = depth ? depth : 1;
	hints = 0;
	return 0;
}

static int plain_submit(struct io_op *op)
{
	int hint = op->opcode == IO_READAHEAD;

	if (hint ? hints >= BACKEND_HINT_SLOTS
	         : finished.count - hints >= max_depth)
		return -EBUSY;
	hints += hint;
	op->result = io_run_now(op);
	io_done_push(&finished, op);
	return 0;
}

static int plain_flush(void)
{
	return 0;
}

static int plain_completion_fd(void)
{
	return -1;
}

static int plain_reap(struct io_op **done, int max, int wait)
{
	int i, n;

	(void)wait; /* everything submitted is already finished */
	n = io_done_pop(&finished, done, max);
	for (i = 0; i < n; i++)
		hints -= done[i]->opcode == IO_READAHEAD;
	return n;
}

static unsigned plain_in_flight(void)
{
	return finished.count;
}

/* Everything, but read-ahead hints only start reading. */
static int plain_runs_at_submit(const struct io_op *op)
{
	return op->opcode != IO_READAHEAD;
}

static void plain_shutdown(void)
{
}

const struct io_backend plain_backend = {
    .name = "plain",
    .init = plain_init,
    .submit = plain_submit,
    .flush = plain_flush,
    .completion_fd = plain_completion_fd,
    .reap = plain_reap,
    .in_flight = plain_in_flight,
    .runs_at_submit = plain_runs_at_submit,
    .shutdown = plain_shutdown,
};
