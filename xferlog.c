/* SPDX-License-Identifier: ISC
 * Copyright (c) 2026 The uring-sftp-server developers.  See LICENSE. */
/* The transfer log.  Each line is formatted whole and appended with one
 * write(2) to a descriptor opened with O_APPEND, so the lines of
 * concurrent sessions sharing the file never mix, and a line the file
 * system took only in part (full, over quota) is cut off again, so that
 * every line in the file is whole.  A failure to write is logged once and
 * otherwise ignored: the log never ends a session. */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "json.h"
#include "log.h"
#include "xferlog.h"

/* The longest path a line carries: the current directory and a client's
 * path after it. */
#define FULL_PATH_MAX (PATH_MAX * 2)
/* A line: the path escaped and the fixed fields. */
#define LINE_MAX_LEN (JSON_ESCAPED_MAX(FULL_PATH_MAX) + 4096)

static int log_fd = -1;
static enum xferlog_format log_format;
static const char *log_user;
static char log_path[PATH_MAX];
static int write_failed; /* logged once */

int xferlog_open(const char *path, enum xferlog_format format, const char *user)
{
	log_fd = open(path,
	              O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC | O_NOCTTY |
	                  O_NONBLOCK,
	              0600);
	if (log_fd == -1) {
		error("xferlog: cannot open \"%s\": %s", path,
		      errno_text(errno));
		return -1;
	}
	log_format = format;
	log_user = user;
	snprintf(log_path, sizeof(log_path), "%s", path);
	return 0;
}

void xferlog_now(struct timespec *t)
{
	clock_gettime(CLOCK_MONOTONIC, t);
}

/* The remote host: the first word of SSH_CONNECTION, "-" without it. */
static const char *remote_host(void)
{
	static char host[256];
	const char *conn = getenv("SSH_CONNECTION");
	size_t n;

	if (conn == NULL || *conn == '\0')
		return "-";
	n = strcspn(conn, " ");
	snprintf(host, sizeof(host), "%.*s", (int)n, conn);
	return host;
}

/* xferlog fields are separated by spaces: a path's white space and control
 * characters become '_', as readers of the format expect. */
static size_t put_plain(char *out, size_t room, const char *s)
{
	size_t n = 0;

	for (; *s != '\0' && n + 1 < room; s++)
		out[n++] = (unsigned char)*s <= ' ' || *s == 0x7f ? '_' : *s;
	out[n] = '\0';
	return n;
}

static void write_failed_once(const char *why)
{
	if (write_failed)
		return;
	write_failed = 1;
	error("xferlog: write to \"%s\" failed: %s; lines of this session "
	      "that do not fit are left out",
	      log_path, why);
}

/*
 * One line, whole or not at all.  O_APPEND makes the one write(2) land
 * after every other session's lines; but a file system that is full (or a
 * quota, or RLIMIT_FSIZE) may take only the start of it, and the next
 * line, ours or another session's, would be glued to that half.  So a
 * short write is cut off again: our descriptor's offset is just past our
 * bytes, and when the file still ends there (no other session appended
 * since) it is truncated back to where the line began.  If another one
 * did append in that instant, its line follows ours and stays: cutting
 * would take it too.
 */
static void append(const char *line, size_t len)
{
	struct stat st;
	ssize_t n;
	off_t end;

	do {
		n = write(log_fd, line, len);
	} while (n == -1 && errno == EINTR);
	if (n == (ssize_t)len)
		return;
	if (n <= 0) {
		write_failed_once(n == -1 ? errno_text(errno)
		                          : "nothing written");
		return;
	}
	end = lseek(log_fd, 0, SEEK_CUR);
	if (end >= n && fstat(log_fd, &st) == 0 && st.st_size == end &&
	    ftruncate(log_fd, end - n) == 0)
		write_failed_once("short write (file system full?); the part "
		                  "written was cut off again");
	else
		write_failed_once("short write (file system full?); the part "
		                  "written could not be cut off again");
}

void xferlog_write(const char *path, uint64_t bytes,
                   const struct timespec *start, char direction, int complete)
{
	static char line[LINE_MAX_LEN], esc[JSON_ESCAPED_MAX(FULL_PATH_MAX)];
	char full[FULL_PATH_MAX], when[64];
	char user[JSON_ESCAPED_MAX(256)], host[JSON_ESCAPED_MAX(256)];
	struct timespec end;
	double secs;
	time_t now;
	struct tm tm;
	int n;

	if (log_fd == -1)
		return;
	xferlog_now(&end);
	secs = (double)(end.tv_sec - start->tv_sec) +
	       (double)(end.tv_nsec - start->tv_nsec) / 1e9;
	if (secs < 0)
		secs = 0;
	if (path[0] == '/' || getcwd(full, PATH_MAX) == NULL)
		snprintf(full, sizeof(full), "%s", path);
	else
		snprintf(full + strlen(full), sizeof(full) - strlen(full),
		         "%s%s", strcmp(full, "/") == 0 ? "" : "/", path);
	now = time(NULL);
	if (log_format == XFERLOG_JSON) {
		gmtime_r(&now, &tm);
		strftime(when, sizeof(when), "%Y-%m-%dT%H:%M:%SZ", &tm);
		json_escape(esc, sizeof(esc), full);
		json_escape(user, sizeof(user), log_user);
		json_escape(host, sizeof(host), remote_host());
		n = snprintf(line, sizeof(line),
		             "{\"time\":\"%s\",\"seconds\":%.3f,"
		             "\"host\":\"%s\",\"bytes\":%llu,\"path\":\"%s\","
		             "\"type\":\"b\",\"action\":\"_\","
		             "\"direction\":\"%c\",\"access\":\"r\","
		             "\"user\":\"%s\",\"service\":\"sftp\","
		             "\"auth\":0,\"auth_user\":\"*\","
		             "\"complete\":%s,\"mib_per_s\":%.3f}\n",
		             when, secs, host, (unsigned long long)bytes, esc,
		             direction, user, complete ? "true" : "false",
		             secs > 0 ? (double)bytes / 1048576.0 / secs : 0.0);
	} else {
		/* "Tue Dec  1 17:38:05 2026", local time, as wu-ftpd wrote
		 * it; whole seconds, rounded. */
		localtime_r(&now, &tm);
		strftime(when, sizeof(when), "%a %b %e %H:%M:%S %Y", &tm);
		put_plain(esc, sizeof(esc), full);
		put_plain(user, sizeof(user), log_user);
		put_plain(host, sizeof(host), remote_host());
		n = snprintf(line, sizeof(line),
		             "%s %lld %s %llu %s b _ %c r %s sftp 0 * %c\n",
		             when, (long long)(secs + 0.5), host,
		             (unsigned long long)bytes, esc, direction, user,
		             complete ? 'c' : 'i');
	}
	if (n > 0 && (size_t)n < sizeof(line))
		append(line, (size_t)n);
}
