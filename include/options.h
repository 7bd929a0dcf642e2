/* SPDX-License-Identifier: ISC
 * Copyright (c) 2026 The uring-sftp-server developers.  See LICENSE. */
/* Command-line options, OpenSSH's letters plus our long options, and the
 * request filter of -P, -p and -R. */
#ifndef OPTIONS_H
#define OPTIONS_H

#include <stddef.h>

#include "backend.h"

struct options {
	int log_level;    /* enum log_level */
	int log_facility; /* syslog LOG_* facility */
	int log_stderr;   /* -e */
	int readonly;     /* -R */
	char *start_dir;  /* -d, expanded (%d %u %U %% ~) */
	char *denied;     /* -P list as given */
	char *allowed;    /* -p list as given */
	int umask_set;
	unsigned umask_value;        /* -u */
	enum backend_choice backend; /* --backend=uring|plain|auto */
	unsigned queue_depth;        /* --queue-depth=N: requests in flight */
	unsigned write_merge;    /* --write-merge=BYTES: 0 turns merging off */
	int confine;             /* --confine[=DIR] */
	const char *confine_dir; /* DIR as given (NULL: the start directory) */
	char *xferlog_path;      /* --xferlog=FILE */
	int xferlog_format;      /* --xferlog-format: enum xferlog_format */
	int atomic_uploads;      /* --atomic-uploads (upload.c) */
	int fsync_on_close;      /* --fsync-on-close (upload.c) */
	int nocache;             /* --nocache (nocache.h) */
	int file_mode;           /* -m: mode of files created, -1: not set */
	int dir_mode;            /* -M: mode of directories created, or -1 */
	int check;               /* --check[=text|json]: enum check_format */
};

/* --check: print what this host gives the server, and exit (hostcheck.h). */
enum check_format { CHECK_NONE = 0, CHECK_TEXT, CHECK_JSON };

/* Outcome of parse_options. */
#define OPTIONS_RUN 0     /* start serving */
#define OPTIONS_EXIT_OK 1 /* printed what was asked (--version); exit 0 */
#define OPTIONS_QUERY_REQUESTS 2 /* -Q requests: print the request names */

/* Parse argv as sftp-server does.  user/home/uid are for -d expansion.
 * Prints usage and exits 1 on bad options, exits like OpenSSH on fatal
 * ones.  Returns OPTIONS_RUN, OPTIONS_EXIT_OK or OPTIONS_QUERY_REQUESTS. */
int parse_options(struct options *o, int argc, char **argv, const char *user,
                  const char *home, unsigned long uid);

/* OpenSSH's tilde_expand, for -d and expand-path: a leading "~" (home, or
 * uid's passwd entry when home is NULL) or "~user" becomes that user's
 * home directory with a trailing slash, followed by the rest of the path
 * with its leading slashes dropped ("~//x" is "HOME/x"); other paths are
 * copied.  A malloc'd string, or NULL (logged as OpenSSH logs it) if the
 * user is unknown or the result is too long for a path. */
char *expand_tilde(const char *arg, const char *home, unsigned long uid);
/* Expand %d, %u, %U, %% and a leading ~ / ~user in a -d argument.
 * Returns a malloc'd string, or NULL if the expansion fails. */
char *expand_start_dir(const char *arg, const char *user, const char *home,
                       unsigned long uid);

#endif
