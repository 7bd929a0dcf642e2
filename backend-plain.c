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

static ssize_t plain_run(struct io_op *op)
{
	ssize_t n;

	if (op->opcode == IO_WRITE || op->opcode == IO_WRITEV ||
	    op->opcode == IO_COPY_RANGE)
		return io_write_now(op);
	do {
		switch (op->opcode) {
		case IO_READ:
			n = op->offset == IO_NO_OFFSET
			        ? read(op->fd, op->buf, op->len)
			        : pread(op->fd, op->buf, op->len,
			                (off_t)op->offset);
			break;
		case IO_FSYNC:
			n = fsync(op->fd);
			break;
		case IO_READAHEAD:
			errno =
			    posix_fadvise(op->fd, (off_t)op->offset,
			                  (off_t)op->len, POSIX_FADV_WILLNEED);
			n = errno ? -1 : 0;
			break;
		case IO_SPLICE_IN: {
			loff_t off = (loff_t)op->offset;

			n = splice(op->fd, &off, op->fd_out, NULL, op->len,
			           SPLICE_F_MOVE);
			break;
		}
		default:
			errno = EINVAL;
			n = -1;
		}
	} while (n == -1 && errno == EINTR);
	return n == -1 ? -errno : n;
}

static int plain_submit(struct io_op *op)
{
	int hint = op->opcode == IO_READAHEAD;

	if (hint ? hints >= BACKEND_HINT_SLOTS
	         : finished.count - hints >= max_depth)
		return -EBUSY;
	hints += hint;
	op->result = plain_run(op);
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

static int plain_can_splice(void)
{
	return 1;
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
    .can_splice = plain_can_splice,
    .shutdown = plain_shutdown,
};
