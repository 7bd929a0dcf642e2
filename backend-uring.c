/* SPDX-License-Identifier: ISC
 * Copyright (c) 2026 The uring-sftp-server developers.  See LICENSE. */
/* The io_uring back end: one small ring, submissions batched into one
 * io_uring_submit per loop turn, completions found by polling the ring fd. */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <liburing.h>
#include <string.h>
#include <sys/uio.h>
#include <unistd.h>

#include "backend.h"
#include "log.h"
#include "testkernel.h"
#include "workers.h"

static struct io_uring ring;
static int ring_ready;
static unsigned queued, in_flight, max_depth;
static unsigned hints; /* of those, read-ahead hints */
/* Writes done at submit time, waiting to be reaped. */
static struct io_done_list written;

/* The io_uring operations the back end uses, each for one of our
 * opcodes (backend.h).  READ, FSYNC and FADVISE (5.6) it needs to start
 * at all; the metadata calls' (statx, openat and close came in 5.6,
 * renameat and unlinkat in 5.11, mkdirat, symlinkat and linkat in 5.15)
 * it uses where the kernel has them, and the others go to the workers
 * (io.c), not logged.  Writes and copy_file_range never reach the ring
 * (uring_submit does them inline). */
const struct uring_op_used uring_ops_used[URING_OPS_USED] = {
    {IORING_OP_READ, IO_READ, "READ"},
    {IORING_OP_FSYNC, IO_FSYNC, "FSYNC"},
    {IORING_OP_FADVISE, IO_READAHEAD, "FADVISE"},
    {IORING_OP_STATX, IO_STATX, "STATX"},
    {IORING_OP_UNLINKAT, IO_UNLINKAT, "UNLINKAT"},
    {IORING_OP_MKDIRAT, IO_MKDIRAT, "MKDIRAT"},
    {IORING_OP_SYMLINKAT, IO_SYMLINKAT, "SYMLINKAT"},
    {IORING_OP_LINKAT, IO_LINKAT, "LINKAT"},
    {IORING_OP_RENAMEAT, IO_RENAMEAT, "RENAMEAT"},
    {IORING_OP_CLOSE, IO_CLOSE, "CLOSE"},
};
static struct uring_probe probed;
static unsigned char meta_has[IO_OPCODES];

const struct uring_probe *uring_probed(void)
{
	return &probed;
}

/* The probe's answer, less what a test's older kernel lacked
 * (testkernel.h). */
static int has_op(const struct io_uring_probe *probe, int op)
{
	return io_uring_opcode_supported(probe, op) && testkernel_uring_op(op);
}

/* Which of the operations this kernel has, into probed.  Every one the
 * ring runs must be there (kernels before 5.6 lack IORING_OP_READ and
 * FADVISE); a missing one is logged at VERBOSE, once: the back end starts
 * once. */
static int probe_opcodes(void)
{
	struct io_uring_probe *probe = io_uring_get_probe_ring(&ring);
	const struct uring_op_used *u;
	size_t i;
	int rc = 0;

	if (probe == NULL) {
		/* IORING_REGISTER_PROBE came in 5.6, with READ. */
		verbose("io_uring cannot list its operations");
		return -ENOSYS;
	}
	probed.listed = 1;
	for (i = 0; i < URING_OPS_USED; i++) {
		u = &uring_ops_used[i];
		probed.has[i] = (unsigned char)has_op(probe, u->ring_op);
		if (io_is_meta(u->io_op))
			meta_has[u->io_op] = probed.has[i];
		else if (!probed.has[i]) {
			verbose("io_uring has no IORING_OP_%s", u->name);
			rc = -ENOSYS;
		}
	}
	io_uring_free_probe(probe);
	return rc;
}

static int uring_init(unsigned depth)
{
	int rc;

	max_depth = depth ? depth : 1;
	hints = 0;
	memset(&probed, 0, sizeof(probed));
	rc = io_uring_queue_init(max_depth + BACKEND_HINT_SLOTS, &ring, 0);
	probed.setup = rc < 0 ? rc : 0;
	if (rc < 0)
		return rc;
	if ((rc = probe_opcodes()) < 0) {
		io_uring_queue_exit(&ring);
		return rc;
	}
	/* The metadata calls wait in io_uring's own worker threads (io-wq),
	 * as many as calls in flight unless bounded: as many as ours
	 * (workers.h).  Before 5.15 the kernel knows no bound (EINVAL):
	 * then io-wq's own, one thread per call in flight, up to
	 * RLIMIT_NPROC. */
	{
		unsigned bound[2] = {WORKERS_MAX, WORKERS_MAX};

		(void)io_uring_register_iowq_max_workers(&ring, bound);
	}
	ring_ready = 1;
	return 0;
}

static int uring_has(int opcode)
{
	return io_is_meta(opcode) && meta_has[opcode];
}

/* Writes and copy_file_range (below says why), and reads of files that
 * are not regular ones (backend.h, at_submit). */
static int uring_runs_at_submit(const struct io_op *op)
{
	return op->opcode == IO_WRITE || op->opcode == IO_WRITEV ||
	       op->opcode == IO_COPY_RANGE ||
	       (op->opcode == IO_READ && op->at_submit);
}

/* Buffered writes are done at submit time (io_write_now), with one system
 * call, and completed without the ring.  The kernel would punt them to
 * io-wq worker threads (ext4 and most file systems cannot write to the
 * page cache without blocking), which measured about 1.3 to 1.8 times the
 * CPU of a plain pwritev for the same upload, and no faster.  (Completing
 * them through the ring with a NOP cost an io_uring_enter and a loop turn
 * apiece.)  copy_file_range has no io_uring opcode: it is done there too. */
static int uring_submit(struct io_op *op)
{
	struct io_uring_sqe *sqe;
	int hint = op->opcode == IO_READAHEAD;

	if (hint ? hints >= BACKEND_HINT_SLOTS
	         : in_flight + queued + written.count - hints >= max_depth)
		return -EBUSY;
	if (uring_runs_at_submit(op)) {
		op->result = io_run_now(op);
		io_done_push(&written, op);
		return 0;
	}
	if ((sqe = io_uring_get_sqe(&ring)) == NULL)
		return -EBUSY;
	switch (op->opcode) {
	case IO_READ:
		io_uring_prep_read(sqe, op->fd, op->buf, (unsigned)op->len,
		                   op->offset);
		sqe->rw_flags = op->rw_flags;
		break;
	case IO_WRITE:
	case IO_WRITEV:
	case IO_COPY_RANGE:
	case IO_CALL: /* io_submit gives these to the workers */
	case IO_OPCODES:
		break; /* done above */
	case IO_STATX:
		io_uring_prep_statx(sqe, op->fd, op->path, op->at_flags,
		                    STATX_BASIC_STATS, op->buf);
		break;
	case IO_UNLINKAT:
		io_uring_prep_unlinkat(sqe, op->fd, op->path, op->at_flags);
		break;
	case IO_MKDIRAT:
		io_uring_prep_mkdirat(sqe, op->fd, op->path, (mode_t)op->mode);
		break;
	case IO_SYMLINKAT:
		io_uring_prep_symlinkat(sqe, op->path, op->fd, op->path2);
		break;
	case IO_LINKAT:
		io_uring_prep_linkat(sqe, op->fd, op->path, op->fd_out,
		                     op->path2, op->at_flags);
		break;
	case IO_RENAMEAT:
		io_uring_prep_renameat(sqe, op->fd, op->path, op->fd_out,
		                       op->path2, (unsigned)op->at_flags);
		break;
	case IO_CLOSE:
		io_uring_prep_close(sqe, op->fd);
		break;
	case IO_FSYNC:
		io_uring_prep_fsync(sqe, op->fd, 0);
		break;
	case IO_READAHEAD:
		/* In a worker thread: it can block on reading metadata. */
		io_uring_prep_fadvise(sqe, op->fd, op->offset, (off_t)op->len,
		                      POSIX_FADV_WILLNEED);
		break;
	}
	io_uring_sqe_set_data(sqe, op);
	queued++;
	hints += hint;
	return 0;
}

static int uring_flush(void)
{
	int rc;

	if (queued == 0)
		return 0;
	do {
		rc = io_uring_submit(&ring);
	} while (rc == -EINTR);
	if (rc < 0)
		return rc;
	/* Whatever the kernel did not take stays in the SQ for next time. */
	in_flight += (unsigned)rc;
	queued -= (unsigned)rc;
	return 0;
}

static int uring_completion_fd(void)
{
	/* Submissions the kernel did not take (io_uring_enter failed or
	 * took fewer) will not complete by themselves: no sleeping on the
	 * ring until the next flush hands them over. */
	return queued > 0 ? -1 : ring.ring_fd;
}

static int uring_reap(struct io_op **done, int max, int wait)
{
	struct io_uring_cqe *cqe;
	struct io_op *op;
	int n, rc;

	n = io_done_pop(&written, done, max);
	while (n < max) {
		if (wait && n == 0 && in_flight > 0)
			rc = io_uring_wait_cqe(&ring, &cqe);
		else
			rc = io_uring_peek_cqe(&ring, &cqe);
		if (rc == -EAGAIN)
			break;
		if (rc == -EINTR)
			continue;
		if (rc < 0)
			return n > 0 ? n : rc;
		op = io_uring_cqe_get_data(cqe);
		op->result = cqe->res;
		io_uring_cqe_seen(&ring, cqe);
		if (op->result == -EOPNOTSUPP && op->rw_flags != 0) {
			/* The file system refuses the flags: read without
			 * them, here, once (the caller stops asking). */
			op->rw_flags = 0;
			op->rw_refused = 1;
			op->result = io_run_now(op);
		}
		in_flight--;
		hints -= op->opcode == IO_READAHEAD;
		done[n++] = op;
	}
	return n;
}

static unsigned uring_in_flight(void)
{
	return in_flight + queued + written.count;
}

static void uring_shutdown(void)
{
	if (ring_ready)
		io_uring_queue_exit(&ring);
	ring_ready = 0;
}

const struct io_backend uring_backend = {
    .name = "io_uring",
    .init = uring_init,
    .submit = uring_submit,
    .flush = uring_flush,
    .completion_fd = uring_completion_fd,
    .reap = uring_reap,
    .in_flight = uring_in_flight,
    .runs_at_submit = uring_runs_at_submit,
    .has = uring_has,
    .shutdown = uring_shutdown,
};
