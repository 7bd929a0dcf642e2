/* SPDX-License-Identifier: ISC
 * Copyright (c) 2026 The uring-sftp-server developers.  See LICENSE. */
/* --confine: Landlock for what the kernel can enforce, and one resolver of
 * client paths beneath the confinement directory for what it cannot.
 * doc/design.md ("Confinement") explains the split and its limits. */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <limits.h>
#include <linux/landlock.h>
#include <pwd.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "confine.h"
#include "kernelrules.h"
#include "landlock-sys.h"
#include "log.h"
#include "testkernel.h"

/* Rights of later ABIs than older kernel headers (Debian 12's) know. */
#ifndef LANDLOCK_ACCESS_FS_REFER
#define LANDLOCK_ACCESS_FS_REFER (1ULL << 13)
#endif
#ifndef LANDLOCK_ACCESS_FS_TRUNCATE
#define LANDLOCK_ACCESS_FS_TRUNCATE (1ULL << 14)
#endif
#ifndef LANDLOCK_ACCESS_FS_IOCTL_DEV
#define LANDLOCK_ACCESS_FS_IOCTL_DEV (1ULL << 15)
#endif
#define LL_NET_BIND_TCP (1ULL << 0)
#define LL_NET_CONNECT_TCP (1ULL << 1)
#define LL_SCOPE_ABSTRACT_UNIX_SOCKET (1ULL << 0)
#define LL_SCOPE_SIGNAL (1ULL << 1)

/* struct landlock_ruleset_attr as of ABI 6; older kernels take a prefix
 * of it (we pass the size their ABI knows). */
struct ll_ruleset_attr {
	uint64_t handled_access_fs;
	uint64_t handled_access_net; /* ABI 4 */
	uint64_t scoped;             /* ABI 6 */
};

/* Every file system right of ABI 1. */
#define LL_FS_ABI1                                                             \
	(LANDLOCK_ACCESS_FS_EXECUTE | LANDLOCK_ACCESS_FS_WRITE_FILE |          \
	 LANDLOCK_ACCESS_FS_READ_FILE | LANDLOCK_ACCESS_FS_READ_DIR |          \
	 LANDLOCK_ACCESS_FS_REMOVE_DIR | LANDLOCK_ACCESS_FS_REMOVE_FILE |      \
	 LANDLOCK_ACCESS_FS_MAKE_CHAR | LANDLOCK_ACCESS_FS_MAKE_DIR |          \
	 LANDLOCK_ACCESS_FS_MAKE_REG | LANDLOCK_ACCESS_FS_MAKE_SOCK |          \
	 LANDLOCK_ACCESS_FS_MAKE_FIFO | LANDLOCK_ACCESS_FS_MAKE_BLOCK |        \
	 LANDLOCK_ACCESS_FS_MAKE_SYM)

/* What SFTP needs beneath the directory; everything else (executing,
 * device and FIFO nodes, device ioctls) stays denied there too. */
#define LL_FS_NEEDED                                                           \
	(LANDLOCK_ACCESS_FS_WRITE_FILE | LANDLOCK_ACCESS_FS_READ_FILE |        \
	 LANDLOCK_ACCESS_FS_READ_DIR | LANDLOCK_ACCESS_FS_REMOVE_DIR |         \
	 LANDLOCK_ACCESS_FS_REMOVE_FILE | LANDLOCK_ACCESS_FS_MAKE_DIR |        \
	 LANDLOCK_ACCESS_FS_MAKE_REG | LANDLOCK_ACCESS_FS_MAKE_SYM |           \
	 LANDLOCK_ACCESS_FS_REFER | LANDLOCK_ACCESS_FS_TRUNCATE)

/* Linux's MAXSYMLINKS: more links than this in one path is ELOOP (OpenSSH's
 * realpath allows fewer, REALPATH_LINKS_ALLOWED). */
#define LINKS_ALLOWED 40

/* Each ".." opens the parent again from DIR, as many opens as it is deep:
 * a path that goes deep and comes back one level at a time costs the
 * square of its length (800 levels: 320000 opens, most of a second of CPU
 * per request).  A resolution that needs more opens than this is ELOOP;
 * ordinary paths need a few dozen. */
#define WALK_OPENS_ALLOWED 32768

static int active;
static int root_fd = -1;         /* O_PATH descriptor of the directory */
static char root[PATH_MAX];      /* its canonical path */
static size_t root_len;          /* strlen(root) */
static char start_dir[PATH_MAX]; /* canonical, beneath root */

int confine_active(void)
{
	return active;
}

const char *confine_root(void)
{
	return root;
}

const char *confine_start_dir(void)
{
	return start_dir;
}

/* ---- the resolver ------------------------------------------------- */

static void close_keeping_errno(int fd)
{
	int saved = errno;

	close(fd);
	errno = saved;
}

/* The path walked so far (canonical, starting with root) and a descriptor
 * of the directory it names.  After a component that is not a directory,
 * fd still names the directory holding it: only ".." may follow. */
struct walk {
	char path[PATH_MAX];
	size_t len;
	int fd;
	int not_dir;
	unsigned long opens; /* directory opens so far */
};

static void walk_close(struct walk *w)
{
	if (w->fd >= 0 && w->fd != root_fd)
		close(w->fd);
	w->fd = -1;
}

/* Open the directory root + rel (canonical, no symlinks), one component at
 * a time and refusing symlinks, so that a component replaced by a symlink
 * since we looked cannot lead anywhere.  Counts the opens in *opens. */
static int open_beneath(const char *rel, unsigned long *opens)
{
	char buf[PATH_MAX], *name, *save = NULL;
	int fd = root_fd, next;

	strlcpy(buf, rel, sizeof(buf));
	for (name = strtok_r(buf, "/", &save); name != NULL;
	     name = strtok_r(NULL, "/", &save)) {
		(*opens)++;
		next = openat(fd, name,
		              O_PATH | O_NOFOLLOW | O_DIRECTORY | O_CLOEXEC);
		if (fd != root_fd)
			close(fd);
		if (next < 0)
			return -errno;
		fd = next;
	}
	return fd;
}

static int walk_start(struct walk *w, const char *from)
{
	w->fd = -1;
	w->not_dir = 0;
	w->len = strlcpy(w->path, from, sizeof(w->path));
	w->fd = open_beneath(from + root_len, &w->opens);
	return w->fd < 0 ? w->fd : 0;
}

static int walk_append(struct walk *w, const char *name)
{
	size_t n = strlen(name);

	if (w->len + 1 + n >= sizeof(w->path))
		return -ENAMETOOLONG;
	if (w->path[w->len - 1] != '/')
		w->path[w->len++] = '/';
	memcpy(w->path + w->len, name, n + 1);
	w->len += n;
	return 0;
}

/* "..": never above root. */
static int walk_up(struct walk *w)
{
	char *slash;

	if (w->len <= root_len)
		return -EACCES;
	slash = strrchr(w->path, '/');
	w->len = (size_t)(slash - w->path);
	if (w->len < root_len)
		w->len = root_len; /* root is "/" */
	w->path[w->len] = '\0';
	if (w->not_dir) {
		/* fd already names the directory that held the file. */
		w->not_dir = 0;
		return 0;
	}
	walk_close(w);
	w->fd = open_beneath(w->path + root_len, &w->opens);
	return w->fd < 0 ? w->fd : 0;
}

/* If path lies under prefix (an absolute canonical path) component by
 * component ("//" and "." ignored), the rest of path after it; else NULL. */
static const char *under_prefix(const char *path, const char *prefix)
{
	const char *p = path, *q = prefix;
	size_t n;

	for (;;) {
		while (*q == '/')
			q++;
		/* Skip separators and "." components of the client's path. */
		for (;;) {
			while (*p == '/')
				p++;
			if (p[0] == '.' && (p[1] == '/' || p[1] == '\0'))
				p++;
			else
				break;
		}
		if (*q == '\0')
			return p;
		n = strcspn(q, "/");
		if (strncmp(p, q, n) != 0 || (p[n] != '/' && p[n] != '\0'))
			return NULL;
		p += n;
		q += n;
	}
}

/* An absolute path (the client's or a symlink's target) as a path relative
 * to root, or NULL when it is not under root.  Compared component by
 * component, never as a string prefix: "/srv/u10" is not under
 * "/srv/u1".  DIR has no other spelling that clients could use: the one
 * configured held no symlink (see open_dir_safely). */
static const char *strip_root(const char *path)
{
	return under_prefix(path, root);
}

static int refuse(const char *path)
{
	logit("confine: refusing \"%s\": outside \"%s\"", path, root);
	return -EACCES;
}

/* Replace what is left to walk by target followed by the rest; more: a
 * slash followed the link (then it still does, even with nothing after:
 * "link/" names a directory, or for OpenSSH's realpath an existing one). */
static int splice_target(char *rest, size_t size, const char *target, int more,
                         const char *after)
{
	char buf[PATH_MAX];
	int n;

	n = snprintf(buf, sizeof(buf), "%s%s%s", target, more ? "/" : "",
	             after);
	if (n < 0 || (size_t)n >= sizeof(buf) || (size_t)n >= size)
		return -ENAMETOOLONG;
	memcpy(rest, buf, (size_t)n + 1);
	return 0;
}

/* The current component ends in a symlink: go on from its target.  An
 * absolute target starts over at root, and must lie under it. */
static int follow_link(struct walk *w, int link_fd, const char *client,
                       char *rest, size_t size, int more, const char *after)
{
	char target[PATH_MAX];
	const char *rel;
	ssize_t n;
	int rc;

	n = readlinkat(link_fd, "", target, sizeof(target) - 1);
	if (n < 0)
		return -errno;
	if (n == 0)
		return -ENOENT;
	target[n] = '\0';
	if (target[0] != '/')
		return splice_target(rest, size, target, more, after);
	if ((rel = strip_root(target)) == NULL)
		return refuse(client);
	walk_close(w);
	if ((rc = walk_start(w, root)) != 0)
		return rc;
	return splice_target(rest, size, rel, more, after);
}

/* One component that is neither "", "." nor "..".  kernel_rules: a final
 * symlink (the path's last component, or the last of a final link's
 * target: what remains is spliced in) is followed only where the kernel
 * would follow it for open(2) (kernel_follows_link: fs.protected_symlinks,
 * nosymfollow).  Links in the middle of a path meet no such rule in the
 * kernel either; REALPATH reads links as OpenSSH's server does (readlink,
 * which the rule does not govern), so it passes kernel_rules = 0. */
static int walk_component(struct walk *w, const char *name, int last,
                          int follow_last, int kernel_rules, int *followed,
                          int *done)
{
	struct stat st;
	int fd, rc;

	*followed = -1;
	*done = 0;
	if (w->not_dir)
		return -ENOTDIR;
	if (last && !follow_last) {
		*done = 1;
		return walk_append(w, name);
	}
	w->opens++;
	fd = openat(w->fd, name, O_PATH | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0) {
		if (errno == ENOENT && last) {
			*done = 1;
			return walk_append(w, name);
		}
		return -errno;
	}
	if (fstat(fd, &st) != 0) {
		rc = -errno;
		close(fd);
		return rc;
	}
	if (S_ISLNK(st.st_mode)) {
		if (last && kernel_rules &&
		    (rc = kernel_follows_link(w->fd, name, &st)) != 0) {
			close(fd);
			return rc;
		}
		*followed = fd; /* the caller reads the link and closes it */
		return 0;
	}
	if ((rc = walk_append(w, name)) != 0) {
		close(fd);
		return rc;
	}
	if (S_ISDIR(st.st_mode)) {
		walk_close(w);
		w->fd = fd;
	} else {
		close(fd);
		w->not_dir = 1;
	}
	return 0;
}

static int walk(struct walk *w, const char *client, int flags)
{
	char rest[PATH_MAX], name[NAME_MAX + 1];
	int follow_last = flags & CONFINE_FOLLOW;
	int bsd = flags & CONFINE_REALPATH;
	unsigned links = 0;
	size_t pos = 0, n;
	int rc, link_fd, done, last, must_be_dir = 0;

	if (client[0] == '/') {
		const char *rel = strip_root(client);

		if (rel == NULL)
			return refuse(client);
		rc = walk_start(w, root);
		if (strlcpy(rest, rel, sizeof(rest)) >= sizeof(rest))
			return -ENAMETOOLONG;
	} else {
		rc = walk_start(w, start_dir);
		if (strlcpy(rest, client, sizeof(rest)) >= sizeof(rest))
			return -ENAMETOOLONG;
	}
	if (rc != 0)
		return rc;
	n = strlen(rest);
	if (!bsd && n > 0 && rest[n - 1] == '/') {
		/* "name/" is a directory: a final symlink is followed (as
		 * the kernel does) and what it leads to must be one. */
		follow_last = 1;
		must_be_dir = 1;
		while (n > 0 && rest[n - 1] == '/')
			rest[--n] = '\0';
	}

	while (rest[pos] != '\0') {
		if (w->opens > WALK_OPENS_ALLOWED)
			return -ELOOP;
		n = strcspn(rest + pos, "/");
		if (n > NAME_MAX)
			return -ENAMETOOLONG;
		memcpy(name, rest + pos, n);
		name[n] = '\0';
		pos += n;
		last = rest[pos] == '\0';
		if (!last)
			pos++;
		if (n == 0)
			continue;
		/* The kernel wants a directory before "." and ".."; OpenSSH's
		 * realpath folds "file/.." as text. */
		if (!bsd && w->not_dir &&
		    (strcmp(name, ".") == 0 || strcmp(name, "..") == 0))
			return -ENOTDIR;
		if (strcmp(name, ".") == 0)
			continue;
		if (strcmp(name, "..") == 0) {
			if (w->len <= root_len)
				return refuse(client);
			if ((rc = walk_up(w)) != 0)
				return rc;
			continue;
		}
		rc = walk_component(w, name, last, follow_last, !bsd, &link_fd,
		                    &done);
		if (rc != 0 || done)
			return rc;
		if (link_fd < 0)
			continue;
		if (++links > (bsd ? REALPATH_LINKS_ALLOWED : LINKS_ALLOWED)) {
			close(link_fd);
			return -ELOOP;
		}
		rc = follow_link(w, link_fd, client, rest, sizeof(rest), !last,
		                 rest + pos);
		close(link_fd);
		if (rc != 0)
			return rc;
		pos = 0;
	}
	return must_be_dir && w->not_dir ? -ENOTDIR : 0;
}

int confine_resolve(const char *path, int flags, char *resolved)
{
	struct walk w = {.fd = -1};
	int rc;

	if (!active)
		return -EINVAL;
	if (path[0] == '\0')
		return -ENOENT;
	rc = walk(&w, path, flags);
	walk_close(&w);
	if (rc == 0)
		strlcpy(resolved, w.path, PATH_MAX);
	return rc;
}

static int beneath_root(const char *path)
{
	return strncmp(path, root, root_len) == 0 &&
	       (path[root_len] == '/' || path[root_len] == '\0' ||
	        root_len == 1);
}

/* ---- calls by path on a resolved path ------------------------------- */

int confine_parent(const char *resolved, char *leaf)
{
	char parent[PATH_MAX];
	const char *rel = resolved + root_len, *name;
	const char *slash;
	unsigned long opens = 0;
	int fd;

	if (!active || !beneath_root(resolved))
		return -EACCES;
	while (*rel == '/')
		rel++;
	slash = strrchr(rel, '/');
	name = slash != NULL ? slash + 1 : rel;
	if (*name == '\0')
		name = "."; /* DIR itself */
	if (strlen(name) > NAME_MAX)
		return -ENAMETOOLONG;
	strlcpy(leaf, name, NAME_MAX + 1);
	snprintf(parent, sizeof(parent), "%.*s",
	         slash != NULL ? (int)(slash - rel) : 0, rel);
	fd = open_beneath(parent, &opens);
	if (fd == root_fd &&
	    (fd = openat(root_fd, ".", O_PATH | O_DIRECTORY | O_CLOEXEC)) < 0)
		return -errno;
	return fd;
}

int confine_lstat(const char *resolved, struct stat *st)
{
	char leaf[NAME_MAX + 1];
	int dir = confine_parent(resolved, leaf), rc;

	if (dir < 0) {
		errno = -dir;
		return -1;
	}
	rc = fstatat(dir, leaf, st, AT_SYMLINK_NOFOLLOW);
	close_keeping_errno(dir);
	return rc;
}

ssize_t confine_readlink(const char *resolved, char *buf, size_t size)
{
	char leaf[NAME_MAX + 1];
	int dir = confine_parent(resolved, leaf);
	ssize_t n;

	if (dir < 0) {
		errno = -dir;
		return -1;
	}
	n = readlinkat(dir, leaf, buf, size);
	close_keeping_errno(dir);
	return n;
}

int confine_statvfs(const char *resolved, struct statvfs *st)
{
	char leaf[NAME_MAX + 1];
	int dir = confine_parent(resolved, leaf), fd, rc = -1;

	if (dir < 0) {
		errno = -dir;
		return -1;
	}
	fd = openat(dir, leaf, O_PATH | O_NOFOLLOW | O_CLOEXEC);
	if (fd >= 0) {
		rc = fstatvfs(fd, st);
		close_keeping_errno(fd);
	}
	close_keeping_errno(dir);
	return rc;
}

int confine_open(const char *resolved, int flags, mode_t mode)
{
	char leaf[NAME_MAX + 1];
	int dir = confine_parent(resolved, leaf), fd;

	if (dir < 0) {
		errno = -dir;
		return -1;
	}
	fd = openat(dir, leaf, flags | O_NOFOLLOW, mode);
	close_keeping_errno(dir);
	return fd;
}

/* ---- calls Landlock governs ------------------------------------------ */

/* Where such a call acts: the directory holding the last component (see
 * confine_parent) and that component; for DIR itself, its path: nothing
 * inside can swap DIR, and the kernel answers for it as without
 * --confine (Landlock refuses removing or renaming it).  Landlock would
 * refuse these calls outside anyway, but the kernel looks a name up
 * before it asks Landlock: going by the path again after a raced swap
 * would tell the client whether a name exists outside (ENOENT, EEXIST,
 * EACCES). */
struct at {
	int dir;
	const char *name;
	char leaf[NAME_MAX + 1];
};

static int at_get(const char *resolved, struct at *at)
{
	if (strcmp(resolved, root) == 0) {
		at->dir = AT_FDCWD;
		at->name = resolved;
		return 0;
	}
	at->dir = confine_parent(resolved, at->leaf);
	if (at->dir < 0) {
		errno = -at->dir;
		return -1;
	}
	at->name = at->leaf;
	return 0;
}

static int at_done(struct at *at, int rc)
{
	if (at->dir >= 0)
		close_keeping_errno(at->dir);
	return rc;
}

/* rename(2) or, with link_it, link(2) from one such name to another. */
static int at_pair(const char *from, const char *to, int link_it)
{
	struct at a, b;
	int rc;

	if (at_get(from, &a) != 0)
		return -1;
	if (at_get(to, &b) != 0)
		return at_done(&a, -1);
	rc = link_it ? linkat(a.dir, a.name, b.dir, b.name, 0)
	             : renameat(a.dir, a.name, b.dir, b.name);
	return at_done(&a, at_done(&b, rc));
}

enum at_call { CALL_UNLINK, CALL_RMDIR, CALL_MKDIR, CALL_SYMLINK };

/* One of those calls on one such name (mode: mkdir's, target: symlink's). */
static int at_one(const char *path, enum at_call call, mode_t mode,
                  const char *target)
{
	struct at a;
	int rc = -1;

	if (at_get(path, &a) != 0)
		return -1;
	switch (call) {
	case CALL_UNLINK:
		rc = unlinkat(a.dir, a.name, 0);
		break;
	case CALL_RMDIR:
		rc = unlinkat(a.dir, a.name, AT_REMOVEDIR);
		break;
	case CALL_MKDIR:
		rc = mkdirat(a.dir, a.name, mode);
		break;
	case CALL_SYMLINK:
		rc = symlinkat(target, a.dir, a.name);
		break;
	}
	return at_done(&a, rc);
}

int confine_unlink(const char *path)
{
	return active ? at_one(path, CALL_UNLINK, 0, NULL) : unlink(path);
}

int confine_rmdir(const char *path)
{
	return active ? at_one(path, CALL_RMDIR, 0, NULL) : rmdir(path);
}

int confine_mkdir(const char *path, mode_t mode)
{
	return active ? at_one(path, CALL_MKDIR, mode, NULL)
	              : mkdir(path, mode);
}

int confine_symlink(const char *target, const char *path)
{
	return active ? at_one(path, CALL_SYMLINK, 0, target)
	              : symlink(target, path);
}

int confine_rename(const char *from, const char *to)
{
	return active ? at_pair(from, to, 0) : rename(from, to);
}

int confine_link(const char *from, const char *to)
{
	return active ? at_pair(from, to, 1) : link(from, to);
}

/* ---- set-up ------------------------------------------------------- */

/*
 * DIR is opened from "/" one component at a time, following no symlink,
 * and refused unless nobody but root and DIR's owner could have moved it:
 *
 *   - no component may be a symlink (which would be followed as it reads
 *     at this moment: whoever can replace it chooses DIR);
 *   - every directory above DIR must be owned by root or by DIR's owner,
 *     and writable by nobody else: no write bit for group or others,
 *     unless it has the sticky bit (/tmp), where nobody but the owner of
 *     an entry (root or DIR's owner, by the rule before) can rename or
 *     remove it.
 *
 * This is sshd's ChrootDirectory rule, widened to let DIR's owner own the
 * directories above it (a user's own tree) and any directory be sticky;
 * DIR itself may have any owner and mode: what it holds is the session's
 * business, where it is is not.  ACLs are not read (as sshd does not).
 */
#define MAX_DEPTH (PATH_MAX / 2) /* "/a/b/...": at most this many names */

struct dir_component {
	size_t end; /* its path is canon[0..end) */
	uid_t uid;
	mode_t mode;
};

/* Why DIR is refused, into why (at most why_size bytes); -1. */
static int __attribute__((format(printf, 4, 5)))
dir_refused(int fd, char *why, size_t why_size, const char *fmt, ...)
{
	va_list ap;

	if (fd >= 0)
		close(fd);
	va_start(ap, fmt);
	vsnprintf(why, why_size, fmt, ap);
	va_end(ap);
	return -1;
}

#define REFUSE(...) return dir_refused(fd, why, why_size, __VA_ARGS__)

/* Open the absolute path dir as DIR (see above) into canon (PATH_MAX
 * bytes, its canonical path): an O_PATH descriptor of it, or -1 with the
 * reason in why. */
static int open_dir_safely(const char *dir, char *canon, char *why,
                           size_t why_size)
{
	static struct dir_component above[MAX_DEPTH];
	char buf[PATH_MAX], *name, *save = NULL;
	size_t depth = 0, len = 0, i;
	struct stat st;
	uid_t owner;
	int fd = -1, next;

	if (strlcpy(buf, dir, sizeof(buf)) >= sizeof(buf))
		REFUSE("\"%.100s...\": %s", dir, strerror(ENAMETOOLONG));
	if ((fd = open("/", O_PATH | O_DIRECTORY | O_CLOEXEC)) < 0 ||
	    fstat(fd, &st) != 0)
		REFUSE("\"/\": %s", strerror(errno));
	canon[0] = '\0';
	above[0].end = 0;
	above[0].uid = st.st_uid;
	above[0].mode = st.st_mode;
	for (name = strtok_r(buf, "/", &save); name != NULL;
	     name = strtok_r(NULL, "/", &save)) {
		if (strcmp(name, ".") == 0)
			continue;
		if (strcmp(name, "..") == 0) {
			/* Text and descriptor go up together: no symlink was
			 * followed on the way down, so the parent is the
			 * one named. */
			if (depth == 0)
				continue;
			next =
			    openat(fd, "..", O_PATH | O_DIRECTORY | O_CLOEXEC);
			close(fd);
			fd = next;
			if (next < 0)
				REFUSE("\"%s/..\": %s", canon, strerror(errno));
			depth--;
			len = above[depth].end;
			canon[len] = '\0';
			continue;
		}
		if (depth + 1 >= MAX_DEPTH ||
		    len + 1 + strlen(name) >= PATH_MAX)
			REFUSE("\"%.100s...\": %s", dir,
			       strerror(ENAMETOOLONG));
		len +=
		    (size_t)snprintf(canon + len, PATH_MAX - len, "/%s", name);
		next = openat(fd, name, O_PATH | O_NOFOLLOW | O_CLOEXEC);
		close(fd);
		fd = next;
		if (next < 0)
			REFUSE("\"%s\": %s", canon, strerror(errno));
		if (fstat(fd, &st) != 0)
			REFUSE("\"%s\": %s", canon, strerror(errno));
		if (S_ISLNK(st.st_mode))
			REFUSE("\"%s\" is a symbolic link: whoever can "
			       "replace it chooses the directory; give the "
			       "real path",
			       canon);
		if (!S_ISDIR(st.st_mode))
			REFUSE("\"%s\": %s", canon, strerror(ENOTDIR));
		depth++;
		above[depth].end = len;
		above[depth].uid = st.st_uid;
		above[depth].mode = st.st_mode;
	}
	if (depth == 0)
		strlcpy(canon, "/", PATH_MAX);
	/* above[depth] is DIR itself: only the ones above it are checked,
	 * against DIR's owner. */
	owner = above[depth].uid;
	for (i = 0; i < depth; i++) {
		const char *path = i == 0 ? "/" : canon;
		int at = i == 0 ? 1 : (int)above[i].end;

		if (above[i].uid != 0 && above[i].uid != owner)
			REFUSE("\"%.*s\", above \"%s\", is owned by uid %lu, "
			       "who could move the directory: only root or "
			       "its owner (uid %lu) may own the directories "
			       "above it",
			       at, path, canon, (unsigned long)above[i].uid,
			       (unsigned long)owner);
		if ((above[i].mode & (S_IWGRP | S_IWOTH)) != 0 &&
		    (above[i].mode & S_ISVTX) == 0)
			REFUSE("\"%.*s\", above \"%s\", is writable by %s "
			       "(mode %04o) and not sticky: they could move "
			       "the directory",
			       at, path, canon,
			       above[i].mode & S_IWOTH ? "others" : "its group",
			       (unsigned)(above[i].mode & 07777));
	}
	return fd;
}

#undef REFUSE

int confine_dir_usable(const char *dir, char *why, size_t why_size)
{
	char canon[PATH_MAX];
	int fd;

	if (dir[0] != '/') {
		snprintf(why, why_size, "\"%s\": %s", dir, strerror(EINVAL));
		return 0;
	}
	if ((fd = open_dir_safely(dir, canon, why, why_size)) < 0)
		return 0;
	close(fd);
	return 1;
}

/* dir: DIR as an absolute path, not resolved yet. */
static int init_resolver(const char *dir)
{
	char cwd[PATH_MAX], why[PATH_MAX * 2 + 256];

	if (root_fd >= 0)
		close(root_fd);
	if ((root_fd = open_dir_safely(dir, root, why, sizeof(why))) < 0)
		fatal_exit(CONFINE_EXIT,
		           "--confine: %s; refusing to run unconfined", why);
	root_len = strlen(root);
	if (getcwd(cwd, sizeof(cwd)) == NULL)
		return -errno;
	if (!beneath_root(cwd)) {
		/* The start directory is outside: start at DIR. */
		if (fchdir(root_fd) != 0 && chdir(root) != 0)
			return -errno;
		strlcpy(cwd, root, sizeof(cwd));
		logit("confine: starting in \"%s\"", root);
	}
	strlcpy(start_dir, cwd, sizeof(start_dir));
	active = 1;
	return 0;
}

static long ll_create_ruleset(const struct ll_ruleset_attr *attr, size_t size,
                              uint32_t flags)
{
	return syscall(__NR_landlock_create_ruleset, attr, size, flags);
}

static long ll_add_rule(int ruleset, int type, const void *attr)
{
	return syscall(__NR_landlock_add_rule, ruleset, type, attr, 0);
}

static long ll_restrict_self(int ruleset)
{
	return syscall(__NR_landlock_restrict_self, ruleset, 0);
}

/* Every right the kernel's ABI knows is handled (so denied unless a rule
 * allows it); attr_size is how much of the attributes that ABI reads. */
static void handled_rights(int abi, struct ll_ruleset_attr *attr,
                           size_t *attr_size)
{
	memset(attr, 0, sizeof(*attr));
	attr->handled_access_fs = LL_FS_ABI1;
	*attr_size = sizeof(attr->handled_access_fs);
	if (abi >= 2)
		attr->handled_access_fs |= LANDLOCK_ACCESS_FS_REFER;
	if (abi >= 3)
		attr->handled_access_fs |= LANDLOCK_ACCESS_FS_TRUNCATE;
	if (abi >= 4) {
		/* The server needs no network at all. */
		attr->handled_access_net = LL_NET_BIND_TCP | LL_NET_CONNECT_TCP;
		*attr_size = offsetof(struct ll_ruleset_attr, scoped);
	}
	if (abi >= 5)
		attr->handled_access_fs |= LANDLOCK_ACCESS_FS_IOCTL_DEV;
	if (abi >= 6) {
		/* Nor to signal or reach abstract sockets outside. */
		attr->scoped = LL_SCOPE_ABSTRACT_UNIX_SOCKET | LL_SCOPE_SIGNAL;
		*attr_size = sizeof(*attr);
	}
}

static void __attribute__((noreturn)) refuse_start(const char *what, int err)
{
	fatal_exit(CONFINE_EXIT,
	           "--confine: %s: %s; refusing to run unconfined", what,
	           strerror(err));
}

/* Look-ups that read files outside DIR, done once now: libbsd keeps the
 * names it found, glibc the time zone.  Later look-ups of other users
 * find nothing, as in a chroot without /etc/passwd. */
static void warm_caches(void)
{
	tzset();
	(void)user_from_uid(getuid(), 0);
	(void)group_from_gid(getgid(), 0);
}

/* What Landlock cannot do at an ABI older than the one we know best.
 * The resolver confines truncation without it; the other rights guard
 * what the server never does.  Only the first is seen by clients. */
static const struct {
	int since;
	const char *what;
} landlock_gaps[] = {
    {2, "no LANDLOCK_ACCESS_FS_REFER (Linux 5.19): renames and links "
        "between directories fail"},
    {3, "no LANDLOCK_ACCESS_FS_TRUNCATE (Linux 6.2): truncation is "
        "confined by path resolution alone"},
    {4, "no network rules (Linux 6.7): TCP bind and connect are not "
        "restricted"},
    {5, "no LANDLOCK_ACCESS_FS_IOCTL_DEV (Linux 6.10): device ioctls are "
        "not restricted"},
    {6, "no scopes (Linux 6.12): signals and abstract sockets are not "
        "restricted"},
};

const char *confine_landlock_gap(int abi, unsigned *i)
{
	for (; *i < sizeof(landlock_gaps) / sizeof(landlock_gaps[0]); (*i)++)
		if (abi < landlock_gaps[*i].since)
			return landlock_gaps[(*i)++].what;
	return NULL;
}

int confine_landlock_abi(void)
{
	long abi = ll_create_ruleset(NULL, 0, LANDLOCK_CREATE_RULESET_VERSION);

	return abi < 0 ? -errno : testkernel_landlock_abi((int)abi);
}

/* Each gap logged once at VERBOSE. */
static void log_missing_rights(int abi)
{
	const char *what;
	unsigned i = 0;

	while ((what = confine_landlock_gap(abi, &i)) != NULL)
		verbose("Landlock ABI %d: %s", abi, what);
}

static void restrict_self(void)
{
	struct landlock_path_beneath_attr beneath;
	struct ll_ruleset_attr attr;
	size_t attr_size;
	int abi, ruleset;

	if ((abi = confine_landlock_abi()) < 0)
		refuse_start("Landlock is not available", -abi);
	handled_rights(abi, &attr, &attr_size);
	ruleset = (int)ll_create_ruleset(&attr, attr_size, 0);
	if (ruleset < 0)
		refuse_start("landlock_create_ruleset", errno);
	beneath.allowed_access = attr.handled_access_fs & LL_FS_NEEDED;
	beneath.parent_fd = root_fd;
	if (ll_add_rule(ruleset, LANDLOCK_RULE_PATH_BENEATH, &beneath) != 0)
		refuse_start("landlock_add_rule", errno);
	if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0)
		refuse_start("PR_SET_NO_NEW_PRIVS", errno);
	if (ll_restrict_self(ruleset) != 0)
		refuse_start("landlock_restrict_self", errno);
	close(ruleset);
	logit("confined to \"%s\" (Landlock ABI %d)", root, abi);
	log_missing_rights(abi);
}

void confine_start(const char *dir)
{
	int rc;

	if (dir[0] != '/')
		refuse_start(dir, EINVAL);
	if ((rc = init_resolver(dir)) != 0)
		refuse_start(dir, -rc);
	warm_caches();
	restrict_self();
}
