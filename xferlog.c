/* The transfer log.  Each line is formatted whole and appended with one
 * write(2) to a descriptor opened with O_APPEND, so the lines of
 * concurrent sessions sharing the file never mix.  A failure to write is
 * logged once and otherwise ignored: the log never ends a session. */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "log.h"
#include "xferlog.h"

/* A line: the path (at most PATH_MAX, escaped up to 6 bytes per byte in
 * JSON) and the fixed fields. */
#define LINE_MAX_LEN (PATH_MAX * 6 + 1024)

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
		error("xferlog: cannot open \"%s\": %s", path, strerror(errno));
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

static size_t put_json(char *out, size_t room, const char *s)
{
	size_t n = 0;
	int w;

	for (; *s != '\0' && n + 7 < room; s++) {
		unsigned char c = (unsigned char)*s;

		if (c == '"' || c == '\\') {
			out[n++] = '\\';
			out[n++] = (char)c;
		} else if (c < 0x20 || c == 0x7f) {
			w = snprintf(out + n, room - n, "\\u%04x", c);
			n += (size_t)w;
		} else {
			out[n++] = (char)c;
		}
	}
	out[n] = '\0';
	return n;
}

static void append(const char *line, size_t len)
{
	ssize_t n;

	do {
		n = write(log_fd, line, len);
	} while (n == -1 && errno == EINTR);
	if (n == (ssize_t)len || write_failed)
		return;
	write_failed = 1;
	error("xferlog: write to \"%s\" failed: %s", log_path,
	      n == -1 ? strerror(errno) : "short write");
}

void xferlog_write(const char *path, uint64_t bytes,
                   const struct timespec *start, char direction, int complete)
{
	static char line[LINE_MAX_LEN], esc[PATH_MAX * 6 + 8];
	char full[PATH_MAX * 2], when[64], user[256 * 6], host[256 * 6];
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
		put_json(esc, sizeof(esc), full);
		put_json(user, sizeof(user), log_user);
		put_json(host, sizeof(host), remote_host());
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
