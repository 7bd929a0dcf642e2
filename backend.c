/* SPDX-License-Identifier: ISC
 * Copyright (c) 2026 The uring-sftp-server developers.  See LICENSE. */
/* Back-end selection and the synchronous helper. */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h> /* renameat2 */
#include <string.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <unistd.h>

#include "backend.h"
#include "log.h"

const struct io_backend *backend = &plain_backend;

int backend_start(enum backend_choice choice, unsigned depth)
{
	int rc;

	if (choice == BACKEND_PLAIN) {
		backend = &plain_backend;
		return backend->init(depth);
	}
	rc = uring_backend.init(depth);
	if (rc == 0) {
		backend = &uring_backend;
		return 0;
	}
	if (choice == BACKEND_URING)
		return rc;
	/* Containers, kernel.io_uring_disabled and small RLIMIT_MEMLOCK all
	 * land here: plain system calls work the same, only slower. */
	verbose("io_uring unavailable (%s); using plain system calls",
	        errno_text(-rc));
	backend = &plain_backend;
	return backend->init(depth);
}

static void io_sync_done(struct io_op *op)
{
	*(int *)op->owner = 1;
}

ssize_t io_sync(struct io_op *op)
{
	struct io_op *done;
	int rc, finished = 0;

	op->done = io_sync_done;
	op->owner = &finished;
	if ((rc = backend->submit(op)) != 0) {
		op->result = rc;
		return rc;
	}
	backend->flush();
	while (!finished) {
		rc = backend->reap(&done, 1, 1);
		if (rc == 0)
			backend->flush(); /* ours may not be submitted yet */
		if (rc == -EINTR || rc == 0)
			continue;
		if (rc < 0) {
			op->result = rc;
			return rc;
		}
		done->done(done);
	}
	return op->result;
}

/* The flags refused: the same call again without them (once). */
static int refused_flags(struct io_op *op, ssize_t n)
{
	if (n != -1 || errno != EOPNOTSUPP || op->rw_flags == 0)
		return 0;
	op->rw_flags = 0;
	op->rw_refused = 1;
	return 1;
}

/* A read or write with op->rw_flags (pread/pwrite without): -1 with
 * errno, or bytes moved. */
static ssize_t rw_now(struct io_op *op, int write)
{
	struct iovec one = {op->buf, op->len};
	const struct iovec *iov = op->opcode == IO_WRITEV ? op->iov : &one;
	int cnt = op->opcode == IO_WRITEV ? op->iovcnt : 1;
	/* -1: the descriptor's own position (preadv2(2)). */
	off_t off = op->offset == IO_NO_OFFSET ? -1 : (off_t)op->offset;
	ssize_t n;

	do {
		n = write ? pwritev2(op->fd, iov, cnt, off, op->rw_flags)
		          : preadv2(op->fd, iov, cnt, off, op->rw_flags);
	} while ((n == -1 && errno == EINTR) || refused_flags(op, n));
	return n;
}

ssize_t io_run_now(struct io_op *op)
{
	ssize_t n;

	if (op->opcode == IO_WRITE || op->opcode == IO_WRITEV ||
	    op->opcode == IO_COPY_RANGE)
		return io_write_now(op);
	if (op->opcode == IO_CLOSE) /* never again: see backend.h */
		return close(op->fd) == 0 ? 0 : -errno;
	do {
		switch (op->opcode) {
		case IO_READ:
			n = op->rw_flags != 0 ? rw_now(op, 0)
			    : op->offset == IO_NO_OFFSET
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
		case IO_STATX:
			n = statx(op->fd, op->path, op->at_flags,
			          STATX_BASIC_STATS, op->buf);
			break;
		case IO_UNLINKAT:
			n = unlinkat(op->fd, op->path, op->at_flags);
			break;
		case IO_MKDIRAT:
			n = mkdirat(op->fd, op->path, (mode_t)op->mode);
			break;
		case IO_SYMLINKAT:
			n = symlinkat(op->path, op->fd, op->path2);
			break;
		case IO_LINKAT:
			n = linkat(op->fd, op->path, op->fd_out, op->path2,
			           op->at_flags);
			break;
		case IO_RENAMEAT:
			n = renameat2(op->fd, op->path, op->fd_out, op->path2,
			              (unsigned)op->at_flags);
			break;
		default:
			errno = EINVAL;
			n = -1;
		}
	} while (n == -1 && errno == EINTR);
	return n == -1 ? -errno : n;
}

ssize_t io_write_now(struct io_op *op)
{
	int pos = op->offset != IO_NO_OFFSET;
	ssize_t n;

	loff_t in, out;

	if (op->rw_flags != 0 && op->opcode != IO_COPY_RANGE) {
		n = rw_now(op, 1);
		return n == -1 ? -errno : n;
	}
	do {
		if (op->opcode == IO_WRITE) {
			n = pos ? pwrite(op->fd, op->buf, op->len,
			                 (off_t)op->offset)
			        : write(op->fd, op->buf, op->len);
		} else if (op->opcode == IO_WRITEV) {
			n = pos ? pwritev(op->fd, op->iov, op->iovcnt,
			                  (off_t)op->offset)
			        : writev(op->fd, op->iov, op->iovcnt);
		} else {
			in = (loff_t)op->offset;
			out = (loff_t)op->offset_out;
			n = copy_file_range(op->fd, &in, op->fd_out, &out,
			                    op->len, 0);
		}
	} while (n == -1 && errno == EINTR);
	return n == -1 ? -errno : n;
}

void io_done_push(struct io_done_list *list, struct io_op *op)
{
	op->next = NULL;
	if (list->tail != NULL)
		list->tail->next = op;
	else
		list->head = op;
	list->tail = op;
	list->count++;
}

int io_done_pop(struct io_done_list *list, struct io_op **done, int max)
{
	int n = 0;

	while (n < max && list->head != NULL) {
		done[n++] = list->head;
		list->head = list->head->next;
		list->count--;
	}
	if (list->head == NULL)
		list->tail = NULL;
	return n;
}
