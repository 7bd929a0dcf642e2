/* SPDX-License-Identifier: ISC
 * Copyright (c) 2026 The uring-sftp-server developers.  See LICENSE. */
/* --xferlog=FILE: one line per closed file in the wu-ftpd/ProFTPD xferlog
 * format (or, with --xferlog-format=json, one JSON object per line). */
#ifndef XFERLOG_H
#define XFERLOG_H

#include <stdint.h>
#include <time.h>

enum xferlog_format { XFERLOG_XFERLOG = 0, XFERLOG_JSON };

/* Open (create) path for appending, at start-up: a chroot or a confined
 * session may not reach it later.  user (kept, not copied) is the name
 * every line carries.  Logs an error and returns -1 when it cannot; the
 * session then goes on without a transfer log. */
int xferlog_open(const char *path, enum xferlog_format format,
                 const char *user);
/* A monotonic time stamp for the start of a transfer. */
void xferlog_now(struct timespec *t);
/* One transfer of bytes to (direction 'i') or from ('o') path (relative
 * paths are taken from the current directory), begun at start. */
void xferlog_write(const char *path, uint64_t bytes,
                   const struct timespec *start, char direction, int complete);

#endif
