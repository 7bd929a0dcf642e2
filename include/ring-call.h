/* SPDX-License-Identifier: ISC
 * Copyright (c) 2026 The uring-sftp-server developers.  See LICENSE. */
/* A handler whose one system call goes to the ring (req->via_ring, set by
 * the queue: route.h): the request's I/O set up for that call, and the
 * reply built from its answer as the handler builds it from the call's.
 * Below the handlers that use it (handlers-file.c, handlers-path.c). */
#ifndef RING_CALL_H
#define RING_CALL_H

#include <sys/types.h>

#include "request.h"

/* req->io set up for the call (an io_opcode of backend.h's metadata
 * calls).  Takes path and path2 (allocated, or NULL: for IO_STATX, ""
 * with AT_EMPTY_PATH, fd itself).  Returns HANDLER_IO. */
int ring_call(struct request *req, int opcode, int fd, char *path, char *path2,
              int at_flags, mode_t mode);

#endif
