/* SPDX-License-Identifier: ISC
 * Copyright (c) 2026 The uring-sftp-server developers.  See LICENSE. */
/* Logging compatible with OpenSSH's log.c: the same levels, facilities,
 * prefixes and escaping, to syslog or (with -e) to stderr. */
#ifndef LOG_H
#define LOG_H

#include <stdarg.h>

enum log_level {
	LOG_LEVEL_QUIET = 0,
	LOG_LEVEL_FATAL,
	LOG_LEVEL_ERROR,
	LOG_LEVEL_INFO,
	LOG_LEVEL_VERBOSE,
	LOG_LEVEL_DEBUG1,
	LOG_LEVEL_DEBUG2,
	LOG_LEVEL_DEBUG3,
	LOG_LEVEL_NOT_SET = -1
};

/* Names as OpenSSH's log_level_number()/log_facility_number() take them,
 * any case.  Return -1 for an unknown name. */
int log_level_from_name(const char *name);
int log_facility_from_name(const char *name);

/* ident is the program's base name; facility a LOG_* syslog facility. */
void log_init(const char *ident, int level, int facility, int on_stderr);
int log_get_level(void);
/* Where stderr lines go (tests point it at a pipe); default 2. */
void log_set_stderr_fd(int fd);

void log_msg(int level, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
void log_vmsg(int level, const char *fmt, va_list ap)
    __attribute__((format(printf, 2, 0)));

#define logit(...) log_msg(LOG_LEVEL_INFO, __VA_ARGS__)
#define verbose(...) log_msg(LOG_LEVEL_VERBOSE, __VA_ARGS__)
#define error(...) log_msg(LOG_LEVEL_ERROR, __VA_ARGS__)
#define debug(...) log_msg(LOG_LEVEL_DEBUG1, __VA_ARGS__)
#define debug2(...) log_msg(LOG_LEVEL_DEBUG2, __VA_ARGS__)
#define debug3(...) log_msg(LOG_LEVEL_DEBUG3, __VA_ARGS__)

struct wbuf;
/* Keep the lines from ERROR to VERBOSE this thread logs in w from now on
 * (NULL: write them again); log_replay writes and empties them.  The
 * queue keeps each request's lines so, and writes them in arrival order,
 * as OpenSSH's one-at-a-time server writes its transaction log, whatever
 * order requests running at once finish in.  FATAL and debug lines go
 * out at once: they say what happens when. */
void log_capture(struct wbuf *w);
void log_replay(struct wbuf *w);

/* strerror(err) for any thread: worker threads log too, and strerror may
 * share one buffer between threads (glibc: MT-Unsafe).  The text stays
 * the thread's own until its next call. */
const char *errno_text(int err);

/* Log at FATAL and exit with status. */
void fatal_exit(int status, const char *fmt, ...)
    __attribute__((format(printf, 2, 3), noreturn));
/* Called before a fatal exit (closes handles, logs the session end);
 * set by main. */
void log_set_cleanup(void (*fn)(int status));

#endif
