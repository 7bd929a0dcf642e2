/* SPDX-License-Identifier: ISC
 * Copyright (c) 2026 The uring-sftp-server developers.  See LICENSE. */
/* Path resolution as OpenSSH's sftp_realpath: the last component may be
 * missing; symlinks followed (at most 32). */
#ifndef REALPATH_H
#define REALPATH_H

/* resolved must hold PATH_MAX bytes.  Returns resolved, or NULL with errno
 * set.  Under --confine this is confine_resolve's answer (EACCES outside
 * the confinement directory). */
char *sftp_realpath(const char *path, char *resolved);

#endif
