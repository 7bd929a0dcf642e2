/* SPDX-License-Identifier: ISC
 * Copyright (c) 2026 The uring-sftp-server developers.  See LICENSE. */
/* Path resolution for REALPATH and expand-path with the BSD realpath rules
 * OpenSSH's sftp_realpath follows, which differ from glibc's realpath(3):
 * a missing last component is fine (clients resolve a name before they
 * create it), and "file/.." is folded without checking that file is a
 * directory. */
#include "config.h"

#include <errno.h>
#include <limits.h>
#include <stdbool.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "confine.h"
#include "realpath.h"

/* The path built so far; always ends with '/' between components. */
struct resolved_path {
	char *buf; /* PATH_MAX bytes, the caller's */
	size_t len;
};

/* Components still to walk, with a cursor at the next one. */
struct pending_path {
	char buf[PATH_MAX];
	size_t pos;
};

static int set_errno(int err)
{
	errno = err;
	return -1;
}

/* Cut the last component, keeping its leading '/'; "/" stays "/". */
static void drop_last_component(struct resolved_path *out)
{
	char *slash;

	if (out->len <= 1)
		return;
	/* Ignore a trailing slash so it is the component's name that goes. */
	out->buf[out->len - 1] = '\0';
	slash = strrchr(out->buf, '/');
	out->len = (size_t)(slash - out->buf) + 1;
	out->buf[out->len] = '\0';
}

static int ensure_trailing_slash(struct resolved_path *out)
{
	if (out->buf[out->len - 1] == '/')
		return 0;
	if (out->len + 1 >= PATH_MAX)
		return set_errno(ENAMETOOLONG);
	out->buf[out->len++] = '/';
	out->buf[out->len] = '\0';
	return 0;
}

static int append_component(struct resolved_path *out, const char *name)
{
	size_t n = strlen(name);

	if (out->len + n >= PATH_MAX)
		return set_errno(ENAMETOOLONG);
	memcpy(out->buf + out->len, name, n + 1);
	out->len += n;
	return 0;
}

/*
 * Copy the next component into name and move the cursor past it and its
 * slash.  Returns true when a slash followed, i.e. the component is not
 * the last one.  Empty components ("//") come back as "".
 */
static bool take_component(struct pending_path *rest, char *name)
{
	const char *start = rest->buf + rest->pos;
	const char *slash = strchr(start, '/');
	size_t n = slash != NULL ? (size_t)(slash - start) : strlen(start);

	memcpy(name, start, n);
	name[n] = '\0';
	rest->pos += n + (slash != NULL);
	return slash != NULL;
}

/*
 * The resolved path ends in a symlink: continue from its target, then
 * whatever was left after the link.  An absolute target restarts at "/",
 * a relative one at the directory holding the link.
 */
static int follow_symlink(struct resolved_path *out, struct pending_path *rest,
                          bool more)
{
	char target[PATH_MAX];
	ssize_t n;
	size_t tail;

	n = readlink(out->buf, target, sizeof(target) - 1);
	if (n < 0)
		return -1;
	/* Linux refuses empty targets; treat one from an odd fs as missing. */
	if (n == 0)
		return set_errno(ENOENT);
	target[n] = '\0';

	if (target[0] == '/') {
		out->buf[1] = '\0';
		out->len = 1;
	} else {
		drop_last_component(out);
	}

	if (more) {
		if (target[n - 1] != '/') {
			if ((size_t)n + 1 >= sizeof(target))
				return set_errno(ENAMETOOLONG);
			target[n++] = '/';
			target[n] = '\0';
		}
		tail = strlcat(target, rest->buf + rest->pos, sizeof(target));
		if (tail >= sizeof(target))
			return set_errno(ENAMETOOLONG);
	}
	strlcpy(rest->buf, target, sizeof(rest->buf));
	rest->pos = 0;
	return 0;
}

/* Where the walk starts: "/" for absolute paths, else the cwd. */
static int start_walk(const char *path, struct resolved_path *out,
                      struct pending_path *rest)
{
	const char *relative = path;

	if (path[0] == '/') {
		strcpy(out->buf, "/");
		out->len = 1;
		relative = path + 1;
	} else {
		if (getcwd(out->buf, PATH_MAX) == NULL)
			return -1;
		out->len = strlen(out->buf);
	}
	if (strlcpy(rest->buf, relative, sizeof(rest->buf)) >=
	    sizeof(rest->buf))
		return set_errno(ENAMETOOLONG);
	rest->pos = 0;
	return 0;
}

static int walk(const char *path, struct resolved_path *out)
{
	struct pending_path rest;
	char name[PATH_MAX];
	unsigned links = 0;
	int saved_errno = errno;

	if (start_walk(path, out, &rest) != 0)
		return -1;

	while (rest.buf[rest.pos] != '\0') {
		struct stat st;
		bool more = take_component(&rest, name);

		if (ensure_trailing_slash(out) != 0)
			return -1;
		if (name[0] == '\0' || strcmp(name, ".") == 0)
			continue;
		if (strcmp(name, "..") == 0) {
			/* Purely textual, as BSD: "file/.." is fine. */
			drop_last_component(out);
			continue;
		}
		if (append_component(out, name) != 0)
			return -1;

		if (lstat(out->buf, &st) != 0) {
			/* Only the last component may be missing. */
			if (errno == ENOENT && !more) {
				errno = saved_errno;
				return 0;
			}
			return -1;
		}
		if (!S_ISLNK(st.st_mode))
			continue;
		if (++links > REALPATH_LINKS_ALLOWED)
			return set_errno(ELOOP);
		if (follow_symlink(out, &rest, more) != 0)
			return -1;
	}

	if (out->len > 1 && out->buf[out->len - 1] == '/')
		out->buf[--out->len] = '\0';
	return 0;
}

char *sftp_realpath(const char *path, char *resolved)
{
	struct resolved_path out = {.buf = resolved, .len = 0};

	if (path == NULL || resolved == NULL) {
		errno = EINVAL;
		return NULL;
	}
	if (path[0] == '\0') {
		errno = ENOENT;
		return NULL;
	}
	if (confine_active()) {
		/* The same resolution as every other path of the session. */
		int rc = confine_resolve(
		    path, CONFINE_FOLLOW | CONFINE_REALPATH, resolved);

		if (rc != 0) {
			errno = -rc;
			return NULL;
		}
		return resolved;
	}
	if (walk(path, &out) != 0)
		return NULL;
	return resolved;
}
