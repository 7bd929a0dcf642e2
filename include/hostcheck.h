/* SPDX-License-Identifier: ISC
 * Copyright (c) 2026 The uring-sftp-server developers.  See LICENSE. */
/* --check: what this host gives the server, as the user who runs it
 * (sshd runs the server as the logged-in user), printed the way an
 * administrator reads it or as JSON.  The facts are gathered by thin
 * probes, each the call the server itself makes (the io_uring back end's
 * start and its operation probe, confine.c's Landlock and directory
 * checks, the pipe quota's reading, upload.c's O_TMPFILE link), into a
 * struct hostcheck; what they mean (io_uring usable or why not, whether
 * an option would work here) and both formats are pure functions of that
 * struct (tests/check_hostcheck.c). */
#ifndef HOSTCHECK_H
#define HOSTCHECK_H

#include <limits.h>
#include <stdio.h>

#include "backend.h"
#include "pipe-quota.h"
#include "stdio-pipes.h"
#include "upload.h"

/* A probe's answer: 0 (it worked) or an errno.  HC_NOT_PROBED: there was
 * nothing to probe with (say why elsewhere). */
#define HC_NOT_PROBED (-1)

struct hostcheck {
	unsigned long uid;
	char user[64];
	char kernel[65];                 /* uname's release */
	unsigned test_major, test_minor; /* acting as (testkernel.h); 0 */

	/* io_uring: the back end's start (uring_probed) */
	struct uring_probe uring;
	int uring_disabled; /* kernel.io_uring_disabled, -1: none */
	long uring_group;   /* kernel.io_uring_group, -1: none */
	int in_uring_group; /* the user is in it */
	int seccomp;        /* /proc/self/status Seccomp:, -1: unknown */
	unsigned long long memlock; /* RLIMIT_MEMLOCK, bytes */
	int memlock_unlimited;

	int landlock_abi; /* or -errno (confine_landlock_abi) */

	/* the user's pipe quota and a session's share of it */
	struct pipe_limits pipes;
	unsigned sessions; /* of this server, this one included */
	unsigned long page_size;
	struct pipe_plan plan;

	/* the start directory (the current one, or -d's) */
	char start_dir[PATH_MAX];
	char start_dir_asked[PATH_MAX]; /* -d as given and expanded, or "" */
	int start_dir_err;              /* chdir to -d's: errno, or 0 */
	char fs_type[32];               /* its file system, or "0x..." */
	int probe_file_err; /* an unnamed (or at once removed) file there */
	enum upload_way upload_way;
	int tmpfile_err;   /* O_TMPFILE there: 0 or errno */
	int direct_err;    /* O_DIRECT on that file */
	int dontcache_err; /* RWF_DONTCACHE (preadv2) on it */
	int fadvise_err;   /* POSIX_FADV_DONTNEED on it */

	/* --confine's directory: DIR, or the start directory */
	char confine_dir[PATH_MAX];
	char confine_why[PATH_MAX + 512]; /* why not usable, or "" */
};

/* Gather the facts (the probes run here, in this process, as this
 * user).  queue_depth sizes the ring as a session's (--queue-depth).
 * The caller has moved into the start directory as the server does;
 * start_dir_asked and start_dir_err say how that went (-d), and
 * confine_dir is --confine's directory as text (NULL: confine_why says
 * why there is none). */
void hostcheck_gather(struct hostcheck *h, unsigned queue_depth,
                      const char *start_dir_asked, int start_dir_err,
                      const char *confine_dir, const char *confine_why);

/* --- The decisions, pure ------------------------------------------------ */

/* Would --backend=auto use io_uring?  1, or 0 with the reason in why. */
int hostcheck_uring_usable(const struct hostcheck *h, char *why, size_t size);
/* Would --confine, --atomic-uploads, --nocache work here?  1 with how in
 * why, or 0 with the reason. */
int hostcheck_confine(const struct hostcheck *h, char *why, size_t size);
int hostcheck_atomic_uploads(const struct hostcheck *h, char *why, size_t size);
int hostcheck_nocache(const struct hostcheck *h, char *why, size_t size);

/* The report, as text or JSON (one object; keys do not change). */
void hostcheck_print_text(const struct hostcheck *h, FILE *f);
void hostcheck_print_json(const struct hostcheck *h, FILE *f);

#endif
