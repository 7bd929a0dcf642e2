/* SPDX-License-Identifier: ISC
 * Copyright (c) 2026 The uring-sftp-server developers.  See LICENSE. */
/* Logging that admins can parse the same way as OpenSSH's sftp-server
 * logs: the same level names, syslog priorities, prefixes, escaping and
 * length limits.  Messages go to syslog or, with -e, to stderr. */
#include "config.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <syslog.h>
#include <unistd.h>

/*
 * libbsd offers two strnvis() argument orders; pick OpenBSD's
 * (dst, src, dstsize, flags) explicitly so the choice does not depend on
 * the libbsd version and its header stays quiet.
 */
#define LIBBSD_OPENBSD_VIS
#include <vis.h>

#include "buf.h"
#include "log.h"

/* The whole formatted line, as OpenSSH's MSGBUFSIZ. */
#define LOG_LINE_MAX 1024
/* syslog lines are cut here, as OpenSSH does. */
#define SYSLOG_TEXT_MAX 500

/*
 * OpenSSH's escaping.  VIS_NOLOCALE keeps bytes >= 0x80 in octal even if
 * the process ever runs in a UTF-8 locale, as OpenSSH (no setlocale) does.
 */
#define SYSLOG_VIS_FLAGS                                                       \
	(VIS_CSTYLE | VIS_NL | VIS_TAB | VIS_OCTAL | VIS_NOLOCALE)
#define STDERR_VIS_FLAGS (VIS_SAFE | VIS_OCTAL | VIS_NOLOCALE)
/* Worst case of strnvis: every byte as a 4-character octal escape. */
#define ESCAPED_MAX (4 * LOG_LINE_MAX)

struct name_value {
	const char *name;
	int value;
};

static const struct name_value level_names[] = {
    {"QUIET", LOG_LEVEL_QUIET},     {"FATAL", LOG_LEVEL_FATAL},
    {"ERROR", LOG_LEVEL_ERROR},     {"INFO", LOG_LEVEL_INFO},
    {"VERBOSE", LOG_LEVEL_VERBOSE}, {"DEBUG", LOG_LEVEL_DEBUG1},
    {"DEBUG1", LOG_LEVEL_DEBUG1},   {"DEBUG2", LOG_LEVEL_DEBUG2},
    {"DEBUG3", LOG_LEVEL_DEBUG3},
};

static const struct name_value facility_names[] = {
    {"DAEMON", LOG_DAEMON},     {"USER", LOG_USER},     {"AUTH", LOG_AUTH},
    {"AUTHPRIV", LOG_AUTHPRIV}, {"LOCAL0", LOG_LOCAL0}, {"LOCAL1", LOG_LOCAL1},
    {"LOCAL2", LOG_LOCAL2},     {"LOCAL3", LOG_LOCAL3}, {"LOCAL4", LOG_LOCAL4},
    {"LOCAL5", LOG_LOCAL5},     {"LOCAL6", LOG_LOCAL6}, {"LOCAL7", LOG_LOCAL7},
};

#define ARRAY_LEN(a) (sizeof(a) / sizeof((a)[0]))

/*
 * Until log_init runs (e.g. a failure very early in start-up) messages of
 * INFO and below go to stderr, as OpenSSH's defaults do.
 */
static int log_level = LOG_LEVEL_INFO;
static int log_on_stderr = 1;
static int log_stderr_fd = STDERR_FILENO;
/* openlog() keeps the pointer, so the ident lives here. */
static char log_ident[64] = "uring-sftp-server";
static int syslog_open;

static void (*cleanup_hook)(int status);
static int in_fatal_exit;

static int lookup_name(const struct name_value *table, size_t n,
                       const char *name)
{
	size_t i;

	if (name == NULL)
		return -1;
	for (i = 0; i < n; i++)
		if (strcasecmp(table[i].name, name) == 0)
			return table[i].value;
	return -1;
}

int log_level_from_name(const char *name)
{
	return lookup_name(level_names, ARRAY_LEN(level_names), name);
}

int log_facility_from_name(const char *name)
{
	return lookup_name(facility_names, ARRAY_LEN(facility_names), name);
}

static int is_known_facility(int facility)
{
	size_t i;

	for (i = 0; i < ARRAY_LEN(facility_names); i++)
		if (facility_names[i].value == facility)
			return 1;
	return 0;
}

/*
 * Like OpenSSH, a bad level always ends the program with a message on
 * stderr, while a bad facility only matters when syslog is used.  The
 * texts are the ones sftp-server prints, since option parsing relies on
 * this check to reject bad -l and -f values.
 */
const char *errno_text(int err)
{
	static __thread char buf[128];

	/* The GNU strerror_r: it returns the text, in buf or a constant. */
	return strerror_r(err, buf, sizeof(buf));
}

void log_init(const char *ident, int level, int facility, int on_stderr)
{
	if (level < LOG_LEVEL_QUIET || level > LOG_LEVEL_DEBUG3) {
		fprintf(stderr, "Unrecognized internal syslog level code %d\n",
		        level);
		exit(1);
	}
	log_level = level;
	log_on_stderr = on_stderr;

	if (ident != NULL && *ident != '\0')
		strlcpy(log_ident, ident, sizeof(log_ident));

	if (syslog_open) {
		closelog();
		syslog_open = 0;
	}
	if (on_stderr)
		return;

	if (!is_known_facility(facility)) {
		fprintf(stderr,
		        "Unrecognized internal syslog facility code %d\n",
		        facility);
		exit(1);
	}
	/*
	 * Opened once instead of around every message: the transaction log
	 * at INFO writes a line per request, and glibc reconnects by itself
	 * if syslogd goes away.
	 */
	openlog(log_ident, LOG_PID, facility);
	syslog_open = 1;
}

int log_get_level(void)
{
	return log_level;
}

void log_set_stderr_fd(int fd)
{
	log_stderr_fd = fd;
}

static int syslog_priority(int level)
{
	switch (level) {
	case LOG_LEVEL_FATAL:
		return LOG_CRIT;
	case LOG_LEVEL_ERROR:
		return LOG_ERR;
	case LOG_LEVEL_INFO:
	case LOG_LEVEL_VERBOSE:
		return LOG_INFO;
	default:
		return LOG_DEBUG;
	}
}

/* As in OpenSSH, "fatal: " and "error: " marks appear in syslog only. */
static const char *level_prefix(int level, int to_stderr)
{
	switch (level) {
	case LOG_LEVEL_FATAL:
		return to_stderr ? NULL : "fatal";
	case LOG_LEVEL_ERROR:
		return to_stderr ? NULL : "error";
	case LOG_LEVEL_DEBUG1:
		return "debug1";
	case LOG_LEVEL_DEBUG2:
		return "debug2";
	case LOG_LEVEL_DEBUG3:
		return "debug3";
	default:
		return NULL;
	}
}

static void emit_stderr(const char *text)
{
	char line[LOG_LINE_MAX];
	int len;

	/* One write() per line so lines from several writers stay whole. */
	len = snprintf(line, sizeof(line), "%.*s\r\n", (int)sizeof(line) - 3,
	               text);
	if (len < 0)
		return;
	if ((size_t)len >= sizeof(line))
		len = sizeof(line) - 1;
	if (write(log_stderr_fd, line, (size_t)len) < 0) {
		/* Nowhere left to report it. */
	}
}

static void emit_syslog(int level, const char *text)
{
	if (!syslog_open) {
		openlog(log_ident, LOG_PID, LOG_AUTH);
		syslog_open = 1;
	}
	syslog(syslog_priority(level), "%.*s", SYSLOG_TEXT_MAX, text);
}

/* Length of the escape sequence that starts at s (a backslash). */
static size_t escape_length(const char *s)
{
	if (s[1] >= '0' && s[1] <= '7' && s[2] != '\0' && s[3] != '\0')
		return 4;            /* \ooo */
	return s[1] != '\0' ? 2 : 1; /* \n, \t, \\ ... */
}

/*
 * Escape src into dst (dst_size bytes) the way OpenBSD's strnvis does.
 * libbsd's strnvis differs in two places, fixed up here: with VIS_SAFE
 * it writes a backslash as "\134" where OpenSSH writes "\\", and when
 * the output does not fit it may cut an escape sequence in half, where
 * OpenBSD stops before the sequence.
 */
static void escape_text(char *dst, size_t dst_size, const char *src, int flags)
{
	char wide[ESCAPED_MAX];
	const char *in = wide;
	size_t used = 0;

	strnvis(wide, src, sizeof(wide), flags);

	while (*in != '\0') {
		const char *out = in; /* what to copy for this piece */
		size_t in_len = 1, out_len = 1;

		if (*in == '\\') {
			in_len = out_len = escape_length(in);
			if (in_len == 4 && strncmp(in, "\\134", 4) == 0) {
				out = "\\\\";
				out_len = 2;
			}
		}
		if (used + out_len >= dst_size)
			break;
		memcpy(dst + used, out, out_len);
		used += out_len;
		in += in_len;
	}
	dst[used] = '\0';
}

/* The lines of the request this thread runs now (NULL: none): kept, so
 * that they can be written in the requests' arrival order. */
static __thread struct wbuf *capture;

void log_capture(struct wbuf *w)
{
	capture = w;
}

static void emit(int level, const char *escaped)
{
	if (log_on_stderr)
		emit_stderr(escaped);
	else
		emit_syslog(level, escaped);
}

/* A line for capture: its level, its text, a NUL.  A line that does not
 * fit is written now instead. */
static int keep(int level, const char *escaped)
{
	size_t len = strlen(escaped) + 1;
	uint8_t *p;

	if (wbuf_reserve(capture, 1 + len, &p) != BUF_OK)
		return 0;
	p[0] = (uint8_t)level;
	memcpy(p + 1, escaped, len);
	capture->len += 1 + len;
	return 1;
}

void log_replay(struct wbuf *w)
{
	size_t off = 0, len;

	while (off < w->len) {
		len = strlen((const char *)w->data + off + 1);
		emit(w->data[off], (const char *)w->data + off + 1);
		off += 2 + len;
	}
	wbuf_reset(w);
}

void log_vmsg(int level, const char *fmt, va_list ap)
{
	char raw[LOG_LINE_MAX];
	char escaped[LOG_LINE_MAX];
	const char *prefix;
	int saved_errno = errno;
	int to_stderr = log_on_stderr;

	if (level > log_level)
		return;

	prefix = level_prefix(level, to_stderr);
	if (prefix != NULL) {
		size_t used;

		snprintf(raw, sizeof(raw), "%s: ", prefix);
		used = strlen(raw);
		vsnprintf(raw + used, sizeof(raw) - used, fmt, ap);
	} else {
		vsnprintf(raw, sizeof(raw), fmt, ap);
	}

	/*
	 * Paths come from the client: escape control characters and
	 * non-ASCII bytes so they cannot forge or garble log lines.
	 */
	escape_text(escaped, sizeof(escaped), raw,
	            to_stderr ? STDERR_VIS_FLAGS : SYSLOG_VIS_FLAGS);

	/* The transaction log (up to VERBOSE) is kept; FATAL and the debug
	 * levels go out now, in the order things happen. */
	if (capture == NULL || level == LOG_LEVEL_FATAL ||
	    level > LOG_LEVEL_VERBOSE || !keep(level, escaped))
		emit(level, escaped);

	errno = saved_errno;
}

void log_msg(int level, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	log_vmsg(level, fmt, ap);
	va_end(ap);
}

void log_set_cleanup(void (*fn)(int status))
{
	cleanup_hook = fn;
}

void fatal_exit(int status, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	log_vmsg(LOG_LEVEL_FATAL, fmt, ap);
	va_end(ap);

	/*
	 * The hook may itself fail fatally (e.g. a close that errors while
	 * handles are flushed); run it only once and then just leave.
	 */
	if (cleanup_hook != NULL && !in_fatal_exit) {
		in_fatal_exit = 1;
		cleanup_hook(status);
	}
	_exit(status);
}
