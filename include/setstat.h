/* SPDX-License-Identifier: ISC
 * Copyright (c) 2026 The uring-sftp-server developers.  See LICENSE. */
/* Applying a request's attributes to a file: SETSTAT, FSETSTAT and
 * lsetstat share one routine, below the handlers that parse and answer
 * them (handlers-file.c, handlers-path.c, extensions.c). */
#ifndef SETSTAT_H
#define SETSTAT_H

#include <stdint.h>

#include "attrib.h"

/* OpenSSH's order (size, mode, times, owner), every step tried, the last
 * failure's status returned.  name is for the log lines (and the path
 * calls); fd is the file for SETSTAT_FD.  Under --confine a path is acted
 * on from its directory's descriptor (confine_parent). */
enum setstat_target { SETSTAT_PATH, SETSTAT_FD, SETSTAT_NOFOLLOW };
uint32_t apply_attrib(const char *name, int fd, const struct attrib *a,
                      enum setstat_target t);

#endif
