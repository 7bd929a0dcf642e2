/* SPDX-License-Identifier: ISC
 * Copyright (c) 2026 The uring-sftp-server developers.  See LICENSE. */
/* The I/O back-end interface.  Two implementations, chosen at start-up:
 * backend-uring.c (io_uring) and backend-plain.c (pread/pwrite).  File data
 * moved for a request goes through it: READ (into READ memory), WRITE and
 * merged runs, fsync, check-file's reads, copy-data's copy_file_range,
 * and read-ahead hints.  Not through it: the POSIX_FADV_SEQUENTIAL hint
 * at OPEN and cachestat (readahead.c), metadata calls (fstat, ftruncate,
 * readdir and the like, in the handlers) but the few a request on slow
 * storage gives io_uring (the metadata opcodes below, io.h), and writes
 * to stdout (output.c). */
#ifndef BACKEND_H
#define BACKEND_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>
#include <sys/uio.h>

/* --backend=uring|plain|auto (options.c parses it). */
enum backend_choice { BACKEND_AUTO = 0, BACKEND_URING, BACKEND_PLAIN };

/* IO_READAHEAD asks the kernel to read [offset, offset + len) into the
 * page cache (posix_fadvise WILLNEED); IO_COPY_RANGE copies len bytes from
 * fd at offset to fd_out at offset_out inside the kernel
 * (copy_file_range(2): a reflink where the file system shares extents). */
enum io_opcode {
	IO_READ,
	IO_WRITE,
	IO_WRITEV,
	IO_FSYNC,
	IO_READAHEAD,
	IO_COPY_RANGE,
	IO_CALL, /* call(op) in a worker thread (workers.h) */
	/* Metadata calls, one system call each (io.h says where they run):
	 * statx(fd, path, at_flags, buf: a struct statx), unlinkat(fd, path,
	 * at_flags), mkdirat(fd, path, mode), symlinkat(path, fd, path2),
	 * linkat(fd, path, fd_out, path2, at_flags), renameat2(fd, path,
	 * fd_out, path2, at_flags) and close(fd). */
	IO_STATX,
	IO_UNLINKAT,
	IO_MKDIRAT,
	IO_SYMLINKAT,
	IO_LINKAT,
	IO_RENAMEAT,
	IO_CLOSE,
	IO_OPCODES /* how many there are */
};

/* One of the metadata calls above? */
static inline int io_is_meta(int opcode)
{
	return opcode >= IO_STATX && opcode < IO_OPCODES;
}

/* An offset for IO_READ, IO_WRITE and IO_WRITEV meaning "none": the
 * descriptor's own position is used, as read(2) and write(2) use it.  For
 * append handles (the kernel puts the bytes at the end whatever the offset,
 * but still refuses one that does not fit off_t) and for files that cannot
 * seek, such as a FIFO opened for appending. */
#define IO_NO_OFFSET UINT64_MAX

struct io_op {
	enum io_opcode opcode;
	int fd;
	int fd_out; /* IO_COPY_RANGE */
	uint64_t offset;
	uint64_t offset_out; /* IO_COPY_RANGE */
	void *buf;           /* IO_READ: destination; IO_WRITE: source */
	size_t len;
	struct iovec *iov; /* IO_WRITEV: the sources, iovcnt of them */
	int iovcnt;
	/* IO_READ of a file that is not a regular one (a device, a FIFO,
	 * /proc): done at submit time with one read, as read(2) gives it
	 * (an io_uring read of /dev/zero may stop early, at a page, when the
	 * CPU is wanted elsewhere; such files' short reads are answers). */
	int at_submit;
	/* IO_CALL: the work, run in a worker thread; it sets result. */
	void (*call)(struct io_op *op);
	ssize_t result; /* bytes moved, or -errno */
	/* IO_READ, IO_WRITE and IO_WRITEV: preadv2/pwritev2 flags
	 * (RWF_DONTCACHE for --nocache: nocache.h).  Where the kernel or the
	 * file system refuses them (EOPNOTSUPP), the back end makes the call
	 * again without them and sets rw_refused. */
	int rw_flags;
	int rw_refused;
	/* The metadata calls' names and flags (see enum io_opcode). */
	const char *path, *path2;
	int at_flags;
	unsigned mode;
	/* io.c's, for the metadata calls: when it was submitted, whether
	 * a worker makes it, what the ring answered when a worker makes it
	 * again (0: it did not), and the done that io.c's own goes on to. */
	int64_t submitted_ns;
	int meta_in_worker;
	ssize_t ring_result;
	void (*meta_then)(struct io_op *op);
	/* Called by whoever reaps the completion (the event loop). */
	void (*done)(struct io_op *op);
	void *owner;        /* the submitter's, untouched by the back end */
	struct io_op *next; /* back-end private */
};

/* Read-ahead hints (IO_READAHEAD) have slots of their own, this many
 * beside the depth: a hint never takes the room of a request's I/O (an
 * fsync or copy-data run through io_sync() finds its slot free). */
#define BACKEND_HINT_SLOTS 8

struct io_backend {
	const char *name;
	/* Set up for up to depth operations in flight, and as many hints as
	 * BACKEND_HINT_SLOTS: 0 or -errno. */
	int (*init)(unsigned depth);
	/* Queue one operation: 0, or -EBUSY when depth ops (or, for a hint,
	 * BACKEND_HINT_SLOTS hints) are in flight. */
	int (*submit)(struct io_op *op);
	/* Hand queued operations to the kernel (one system call). */
	int (*flush)(void);
	/* A descriptor that polls readable when completions wait, or -1 when
	 * the caller must not sleep on one: completions are always ready at
	 * once, or submissions still wait to be handed over (flush again). */
	int (*completion_fd)(void);
	/* Move up to max finished operations into done[]; with wait, block
	 * until at least one finished (if any is in flight). Returns the
	 * count, or -errno. */
	int (*reap)(struct io_op **done, int max, int wait);
	/* Submitted and not yet reaped. */
	unsigned (*in_flight)(void);
	/* Does submit run op itself, in the caller's thread (so that it
	 * may wait on slow storage there)?  NULL: never. */
	int (*runs_at_submit)(const struct io_op *op);
	/* Can it run this metadata opcode (io_is_meta) itself?  NULL:
	 * none (the workers make those calls: io.c). */
	int (*has)(int opcode);
	void (*shutdown)(void);
};

/* Operations a back end finished at submit time, in order, until they are
 * reaped: both back ends run some system calls inline. */
struct io_done_list {
	struct io_op *head, *tail;
	unsigned count;
};

void io_done_push(struct io_done_list *list, struct io_op *op);
/* Move up to max of them into done[]; returns how many. */
int io_done_pop(struct io_done_list *list, struct io_op **done, int max);

/* The io_uring operations the back end uses (backend-uring.c says
 * which it needs to start), and what the probe at its start found:
 * --check reports them (hostcheck.c). */
struct uring_op_used {
	int ring_op; /* IORING_OP_ */
	int io_op;   /* enum io_opcode */
	const char *name;
};
#define URING_OPS_USED 10
extern const struct uring_op_used uring_ops_used[URING_OPS_USED];
struct uring_probe {
	int setup;  /* 0, or io_uring_setup's -errno */
	int listed; /* the kernel listed its operations (5.6) */
	/* Which of uring_ops_used it has (less those a test's older kernel
	 * lacked, testkernel.h). */
	unsigned char has[URING_OPS_USED];
};
/* After uring_backend.init, started or not. */
const struct uring_probe *uring_probed(void);

extern const struct io_backend plain_backend;
extern const struct io_backend uring_backend;

/* The back end in use. */
extern const struct io_backend *backend;

/* Choose and start a back end: AUTO tries io_uring and falls back to plain
 * (logged once at VERBOSE).  Returns 0, or -errno when a forced back end
 * cannot start. */
int backend_start(enum backend_choice choice, unsigned depth);

/* Any operation but IO_CALL now, with one system call (retried on
 * EINTR, but for IO_CLOSE: the descriptor is gone either way): bytes
 * moved, 0 (a descriptor for none of them), or -errno. */
ssize_t io_run_now(struct io_op *op);
/* IO_WRITE, IO_WRITEV (op->iov) or IO_COPY_RANGE now, with one system
 * call (retried on EINTR): bytes written or -errno.  Both back ends do
 * these at submit time (copy_file_range has no io_uring opcode). */
ssize_t io_write_now(struct io_op *op);

/* Run one operation to completion (for barrier requests such as fsync and
 * copy-data); other completions that arrive meanwhile go to their done
 * callbacks.  Returns op->result. */
ssize_t io_sync(struct io_op *op);
#endif
