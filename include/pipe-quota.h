/* SPDX-License-Identifier: ISC
 * Copyright (c) 2026 The uring-sftp-server developers.  See LICENSE. */
/* What the kernel tells of the user's pipe quota, read from /proc (the
 * decisions on it are pipes.h's). */
#ifndef PIPE_QUOTA_H
#define PIPE_QUOTA_H

struct pipe_limits {
	unsigned long soft_pages; /* fs.pipe-user-pages-soft; 0: none */
	unsigned long hard_pages; /* fs.pipe-user-pages-hard; 0: none */
	unsigned long max_pages;  /* fs.pipe-max-size */
	int exempt;               /* CAP_SYS_RESOURCE or CAP_SYS_ADMIN */
};

/* A sysctl's value (its file under /proc/sys, a number), or dflt when it
 * cannot be read (there is none, or a confined process). */
unsigned long read_sysctl(const char *path, unsigned long dflt);
/* The sysctls (the kernel's defaults where they cannot be read, as in a
 * confined process) and whether this process is exempt. */
void pipe_quota_read(struct pipe_limits *l, unsigned long page_size);
/* Sessions of this server the user runs now, this one included (1 when
 * /proc cannot be read). */
unsigned pipe_quota_sessions(void);

#endif
