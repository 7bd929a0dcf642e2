/* SPDX-License-Identifier: ISC
 * Copyright (c) 2026 The uring-sftp-server developers.  See LICENSE. */
/* stdout, the one place replies leave: writev through a small operation
 * table (the real stdout, or a harness's fake), the byte total, pacing,
 * and whether anyone reads stdout at all. */
#ifndef OUTPUT_H
#define OUTPUT_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>
#include <sys/uio.h>

struct output_ops {
	/* As writev(2): bytes moved, or -1 with errno (EAGAIN: full).
	 * Non-blocking, except with sshd reading a pipe stdout, where it
	 * blocks until all is in the pipe (stdio-pipes.h,
	 * stdout_may_block). */
	ssize_t (*writev)(const struct iovec *iov, int cnt);
	/* Bytes written to stdout that its reader has not read yet, or -1
	 * when that cannot be told. */
	int64_t (*unread)(void);
	/* Make stdout's buffer about bytes large: its size now, or 0 when
	 * it cannot be sized (NULL: never). */
	size_t (*resize)(size_t bytes);
};

/* The real stdout (fd 1): FIONREAD on a pipe, SIOCOUTQ on a socket. */
extern const struct output_ops output_stdout_ops;
/* Look at the real stdout once at start: what output_stdout_ops need,
 * and the pipe capacity worth pacing (0: no pacing; see outpace.h). */
size_t output_stdout_setup(void);

/* Start over (a session): total 0, a reader. */
void output_init(const struct output_ops *ops, size_t pace_capacity);

enum output_result {
	OUTPUT_MOVED, /* *moved bytes went out (at least one) */
	OUTPUT_FULL,  /* stdout takes nothing now: wait for room */
	OUTPUT_GONE,  /* its reader left (now or before): drop replies */
	OUTPUT_FAILED /* another error, errno set: end the session */
};
int output_writev(const struct iovec *iov, int cnt, size_t *moved);
/* stdout's reader has gone (EPIPE, POLLERR/POLLHUP): every later reply
 * is dropped. */
void output_lost(void);
int output_gone(void);

/* Size stdout's buffer towards bytes (ops->resize), and pace by the new
 * size: its size now, or 0 when it is not sized. */
size_t output_resize(size_t bytes);

/* All bytes written so far. */
uint64_t output_total(void);

/* Pacing (outpace.h) of a full stdout, at now_ns: how long to sleep
 * before writing again (0: wait for room instead), and whether a pause
 * woken early is over. */
int64_t output_pace_wait(int64_t now_ns);
int output_pace_woke(int64_t now_ns);

#endif
