/* SPDX-License-Identifier: ISC
 * Copyright (c) 2026 The uring-sftp-server developers.  See LICENSE. */
/* SFTP v3 file attributes and the ls -l style long name. */
#ifndef ATTRIB_H
#define ATTRIB_H

#include <stdint.h>
#include <sys/stat.h>
#include <time.h>

#include "buf.h"

struct attrib {
	uint32_t flags;
	uint64_t size;
	uint32_t uid;
	uint32_t gid;
	uint32_t perm;
	uint32_t atime;
	uint32_t mtime;
};

void attrib_clear(struct attrib *a);
/* Decode from the wire; extended pairs are read and dropped (more than
 * 0x100000 of them is a format error, as in OpenSSH 9.4+).  Returns a
 * BUF_* code. */
int attrib_decode(struct rbuf *r, struct attrib *a);
int attrib_encode(struct wbuf *w, const struct attrib *a);
/* flags = SIZE|UIDGID|PERMISSIONS|ACMODTIME, perm = full st_mode. */
void attrib_from_stat(const struct stat *st, struct attrib *a);
/* The same from statx(2)'s answer (a call made through the ring). */
struct statx;
void attrib_from_statx(const struct statx *stx, struct attrib *a);

/* OpenSSH's ls_file(name, st, 0, 0): strmode, links, user, group, size,
 * date, name.  now decides between "%b %e %H:%M" and "%b %e  %Y".
 * Returns a malloc'd string or NULL. */
char *ls_longname(const char *name, const struct stat *st, time_t now);

#endif
