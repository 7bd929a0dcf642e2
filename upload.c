/* SPDX-License-Identifier: ISC
 * Copyright (c) 2026 The uring-sftp-server developers.  See LICENSE. */
/* The upload target: what OPEN, CLOSE, MKDIR, SETSTAT and copy-file do
 * beyond OpenSSH's server for --atomic-uploads, -m, -M and
 * --fsync-on-close (see upload.h, and doc/design.md, "Uploads"), and
 * open_file, the open of a client's path that every request uses.
 *
 * An atomic upload is written to an O_TMPFILE file opened from the
 * target's directory, and linked in at CLOSE: linkat(AT_EMPTY_PATH) where
 * the kernel allows it (CAP_DAC_READ_SEARCH, or Linux 6.10 and later for a
 * file the process opened itself), else linkat of /proc/self/fd/N.  A new
 * target is linked under its name at once (which fails rather than replace
 * a file that appeared meanwhile); an existing one is replaced by linking
 * under a hidden unique name and renaming that over it.  Where the file
 * system has no O_TMPFILE, or neither way of linking works (a jail without
 * /proc on an older kernel), the file is created under a hidden unique
 * name, ".NAME.uring-sftp.XXXXXX", renamed over the target at CLOSE and
 * removed when the session ends without CLOSE. */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "confine.h"
#include "kernelrules.h"
#include "log.h"
#include "server.h"
#include "upload.h"

#ifndef STATX_ATTR_MOUNT_ROOT
#define STATX_ATTR_MOUNT_ROOT 0x2000 /* Linux 5.8 */
#endif

/* Tries at a free hidden name before giving up (EEXIST). */
#define HIDDEN_NAME_TRIES 64
/* What follows NAME in a hidden name: ".uring-sftp." and six letters. */
#define HIDDEN_SUFFIX ".uring-sftp."
#define HIDDEN_RANDOM 6
/* Symlinks followed to the target, as the kernel allows. */
#define TARGET_LINKS_MAX 40

struct upload {
	int dir;                 /* O_PATH descriptor of the target's dir */
	char leaf[NAME_MAX + 1]; /* the target's name in it */
	char temp[NAME_MAX + 1]; /* hidden name of a named temp, or "" */
	int atomic;              /* linked in at CLOSE */
	int excl;                /* CREATE|EXCL: never replace a file */
	int created;             /* a new name: its directory is synced */
	int replaces;            /* old is the file to replace */
	struct stat old;
};

/* How an O_TMPFILE file gets a name (found by the first upload_open;
 * OPENs may run in worker threads at once, hence the atomic accesses: two
 * that both ask find the same answer). */
enum link_how {
	LINK_UNKNOWN,
	LINK_EMPTY_PATH, /* linkat(fd, "", ..., AT_EMPTY_PATH) */
	LINK_PROC,       /* linkat of /proc/self/fd/N, following it */
	LINK_NONE        /* neither: use named temporary files */
};
static int link_how_found;

static enum link_how link_how(void)
{
	return (enum link_how)__atomic_load_n(&link_how_found,
	                                      __ATOMIC_RELAXED);
}

static void close_keeping_errno(int fd)
{
	int saved = errno;

	close(fd);
	errno = saved;
}

static int writable(int flags)
{
	return (flags & O_ACCMODE) != O_RDONLY;
}

/* ---- opening a client's path ------------------------------------------ */

/* A confined path is opened from its directory's descriptor, so that a
 * directory swapped for a symlink since it was resolved cannot lead
 * elsewhere (see confine_parent). */
static int open_by_name(const char *name, int flags, int mode)
{
	if (confine_active())
		return confine_open(name, flags, (mode_t)mode);
	return open(name, flags, mode);
}

/* Opening a FIFO waits for its other end, which would stop the whole
 * server (OpenSSH's waits too): a FIFO is opened without waiting, so
 * reading alone opens at once and writing alone fails (ENXIO) while
 * nobody reads.  The look before the open also tells whether the open
 * creates the file (-m, --fsync-on-close): it did when nothing was there
 * (a file another process creates at that name at that very moment would
 * count as ours). */
int open_file_noting(const char *name, int *flags, int mode, int *created)
{
	struct stat st;
	int rc, fd, absent;

	/* A confined name has no final link left to follow (see Races). */
	rc = confine_active() ? confine_lstat(name, &st) : stat(name, &st);
	absent = rc == -1 && errno == ENOENT;
	if (rc == 0 && S_ISFIFO(st.st_mode))
		*flags |= O_NONBLOCK;
	fd = open_by_name(name, *flags, mode);
	*created = fd >= 0 && absent && (*flags & O_CREAT);
	return fd;
}

int open_file(const char *name, int *flags, int mode)
{
	int created;

	return open_file_noting(name, flags, mode, &created);
}

/* ---- finding the target --------------------------------------------- */

/* Split path into its directory, opened O_PATH from base (which an
 * absolute path ignores) into *dir, and its last name.  The kernel walks
 * the directory part: its own rules for the links met on the way.
 * Returns 0, -errno, or LEAVE_TO_OPEN for a name with no plain last name
 * ("", ".", "..", a trailing slash), which the caller leaves to open(2):
 * for an upload that can only fail (EISDIR, ENOTDIR, ENOENT), so nothing
 * is truncated in place. */
#define LEAVE_TO_OPEN 1
static int open_parent_at(int base, const char *path, int *dir, char *leaf)
{
	char parent[PATH_MAX];
	const char *slash = strrchr(path, '/');
	const char *name = slash != NULL ? slash + 1 : path;

	*dir = -1;
	if (strlen(path) >= PATH_MAX)
		return -ENAMETOOLONG; /* as the kernel answers it */
	if (*name == '\0' || strcmp(name, ".") == 0 || strcmp(name, "..") == 0)
		return LEAVE_TO_OPEN;
	if (strlen(name) > NAME_MAX)
		return -ENAMETOOLONG;
	if (slash == NULL)
		strlcpy(parent, ".", sizeof(parent));
	else if (slash == path)
		strlcpy(parent, "/", sizeof(parent));
	else
		snprintf(parent, sizeof(parent), "%.*s", (int)(slash - path),
		         path);
	strlcpy(leaf, name, NAME_MAX + 1);
	*dir = openat(base, parent, O_PATH | O_DIRECTORY | O_CLOEXEC);
	return *dir >= 0 ? 0 : -errno;
}

/* If leaf in *dir is a symlink: the directory and name it leads to, as
 * open(2) follows a path's last component: only where the kernel would
 * (kernel_follows_link: fs.protected_symlinks, nosymfollow), the target's
 * directory walked by the kernel from *dir, no path ever pasted together.
 * Returns 0 when leaf is no symlink (or absent), 2 when it followed one
 * (*dir and leaf replaced), else as open_parent_at. */
#define FOLLOWED 2
static int follow_one(int *dir, char *leaf)
{
	char link[PATH_MAX];
	struct stat st;
	ssize_t n;
	int rc, next;

	if (fstatat(*dir, leaf, &st, AT_SYMLINK_NOFOLLOW) == -1)
		return errno == ENOENT ? 0 : -errno;
	if (!S_ISLNK(st.st_mode))
		return 0;
	if ((rc = kernel_follows_link(*dir, leaf, &st)) != 0)
		return rc;
	n = readlinkat(*dir, leaf, link, sizeof(link));
	if (n < 0)
		return -errno;
	if (n == 0)
		return -ENOENT; /* as open(2) answers an empty link */
	if ((size_t)n >= sizeof(link))
		return -ENAMETOOLONG;
	link[n] = '\0';
	if ((rc = open_parent_at(*dir, link, &next, leaf)) != 0)
		return rc;
	close(*dir);
	*dir = next;
	return FOLLOWED;
}

/* The directory (*dir, O_PATH) and name (leaf) of the file open(2) of name
 * would reach: a final symlink is followed (a dangling one to the name it
 * points at, which O_CREAT creates) unless nofollow.  Under --confine the
 * resolution did that already (confine_resolve), and the directory is
 * reached again from DIR (see confine_parent).  Returns 0, LEAVE_TO_OPEN,
 * or -errno: what open(2) would have answered, or why the directory could
 * not be held (EMFILE, ENOMEM); never a guess at another name. */
static int find_target(const char *name, int nofollow, int *dir, char *leaf)
{
	int hops, rc;

	if (confine_active()) {
		if ((*dir = confine_parent(name, leaf)) < 0) {
			rc = *dir;
			*dir = -1;
			return rc;
		}
		if (strcmp(leaf, ".") != 0)
			return 0;
		close(*dir);
		*dir = -1;
		return LEAVE_TO_OPEN;
	}
	if ((rc = open_parent_at(AT_FDCWD, name, dir, leaf)) != 0)
		return rc;
	for (hops = 0; !nofollow; hops++) {
		rc = hops > TARGET_LINKS_MAX ? -ELOOP : follow_one(dir, leaf);
		if (rc == 0)
			break;
		if (rc == FOLLOWED)
			continue;
		close(*dir);
		*dir = -1;
		return rc;
	}
	return 0;
}

/* ---- temporary files ------------------------------------------------- */

/* A hidden name beside leaf, unlikely to exist: ".LEAF.uring-sftp.XXXXXX",
 * LEAF cut short where the whole would be longer than NAME_MAX. */
static void hidden_name(const char *leaf, char *out)
{
	static const char letters[] = "abcdefghijklmnopqrstuvwxyz"
	                              "ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789";
	char rnd[HIDDEN_RANDOM + 1];
	int room = NAME_MAX - 1 - (int)strlen(HIDDEN_SUFFIX) - HIDDEN_RANDOM;
	int i;

	for (i = 0; i < HIDDEN_RANDOM; i++)
		rnd[i] = letters[arc4random_uniform(sizeof(letters) - 1)];
	rnd[HIDDEN_RANDOM] = '\0';
	snprintf(out, NAME_MAX + 1, ".%.*s%s%s", room, leaf, HIDDEN_SUFFIX,
	         rnd);
}

/* Create a new file under a hidden unique name in t->dir (t->temp). */
static int open_named_temp(struct upload *t, int how, mode_t mode)
{
	int fd = -1, i;

	for (i = 0; i < HIDDEN_NAME_TRIES; i++) {
		hidden_name(t->leaf, t->temp);
		fd = openat(t->dir, t->temp,
		            how | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC,
		            mode);
		if (fd >= 0 || errno != EEXIST)
			break;
	}
	if (fd < 0)
		t->temp[0] = '\0';
	return fd;
}

/* Give the O_TMPFILE file fd the name name in dir. */
static int link_tmpfile(int fd, int dir, const char *name)
{
	char proc[64];

	if (link_how() == LINK_EMPTY_PATH)
		return linkat(fd, "", dir, name, AT_EMPTY_PATH);
	snprintf(proc, sizeof(proc), "/proc/self/fd/%d", fd);
	return linkat(AT_FDCWD, proc, dir, name, AT_SYMLINK_FOLLOW);
}

/* Can an O_TMPFILE file be linked in at all, and how?  Asked once, with a
 * link to "." that can only fail: EEXIST means the kernel looked the file
 * up and went on to the new name, so the way works; without the right to
 * link by descriptor (AT_EMPTY_PATH before Linux 6.10 without
 * CAP_DAC_READ_SEARCH) or without /proc it says ENOENT first. */
static void find_link_how(int fd, int dir)
{
	enum link_how how;
	char proc[64];

	if (link_how() != LINK_UNKNOWN)
		return;
	if (linkat(fd, "", dir, ".", AT_EMPTY_PATH) == -1 && errno == EEXIST) {
		how = LINK_EMPTY_PATH;
	} else {
		snprintf(proc, sizeof(proc), "/proc/self/fd/%d", fd);
		how =
		    linkat(AT_FDCWD, proc, dir, ".", AT_SYMLINK_FOLLOW) == -1 &&
		            errno == EEXIST
		        ? LINK_PROC
		        : LINK_NONE;
	}
	__atomic_store_n(&link_how_found, (int)how, __ATOMIC_RELAXED);
	debug("atomic uploads: %s",
	      how == LINK_EMPTY_PATH ? "O_TMPFILE, linked by descriptor"
	      : how == LINK_PROC     ? "O_TMPFILE, linked through /proc"
	                             : "named temporary files");
}

enum upload_way upload_probe_way(int dir, int *err)
{
	int fd = openat(dir, ".", O_TMPFILE | O_WRONLY | O_CLOEXEC, 0600);

	*err = fd < 0 ? errno : 0;
	if (fd < 0)
		return errno == EOPNOTSUPP || errno == EISDIR || errno == EINVAL
		           ? UPLOAD_WAY_NAMED
		           : UPLOAD_WAY_UNKNOWN;
	find_link_how(fd, dir);
	close(fd);
	switch (link_how()) {
	case LINK_EMPTY_PATH:
		return UPLOAD_WAY_LINK_FD;
	case LINK_PROC:
		return UPLOAD_WAY_LINK_PROC;
	default:
		return UPLOAD_WAY_NAMED;
	}
}

/* The new file of an atomic upload: O_TMPFILE where the file system and
 * the kernel allow, else a hidden name. */
static int open_temp(struct upload *t, int flags, mode_t mode)
{
	int how = flags & (O_ACCMODE | O_APPEND);
	int fd;

	if (link_how() != LINK_NONE) {
		fd = openat(t->dir, ".", O_TMPFILE | how | O_CLOEXEC, mode);
		if (fd >= 0) {
			find_link_how(fd, t->dir);
			if (link_how() != LINK_NONE)
				return fd;
			close(fd);
		} else if (errno != EOPNOTSUPP && errno != EISDIR &&
		           errno != EINVAL) {
			return -1; /* EACCES, ENOSPC, EROFS, ...: the answer */
		}
	}
	return open_named_temp(t, how, mode);
}

/* The old file's permission bits, access time and, where we may, owner
 * and group, onto the new one: a TRUNCATE keeps them in OpenSSH's server
 * (the set-ID bits are dropped, as a write by an unprivileged process
 * drops them). */
static int keep_old_attributes(const struct upload *t, int fd, const char *name)
{
	struct timespec times[2] = {t->old.st_atim, {.tv_nsec = UTIME_OMIT}};
	struct stat st;

	if (fstat(fd, &st) == 0 &&
	    (st.st_uid != t->old.st_uid || st.st_gid != t->old.st_gid) &&
	    fchown(fd, t->old.st_uid, t->old.st_gid) == -1 &&
	    (st.st_gid == t->old.st_gid ||
	     fchown(fd, (uid_t)-1, t->old.st_gid) == -1))
		verbose(
		    "atomic upload \"%s\": owner %lu group %lu not kept: %s",
		    name, (unsigned long)t->old.st_uid,
		    (unsigned long)t->old.st_gid, errno_text(errno));
	(void)futimens(fd, times);
	return fchmod(fd, t->old.st_mode & 0777);
}

/* ---- OPEN ------------------------------------------------------------ */

/* Is leaf in dir the root of a mount (a file bind-mounted over another,
 * as containers mount /etc/hosts and ConfigMaps)?  Nothing can be renamed
 * over it (EBUSY).  Kernels before 5.8 do not say: there a file on
 * another device than its directory counts (a bind mount from the same
 * file system is then found only at CLOSE). */
static int is_mount_point(int dir, const char *leaf, const struct stat *st)
{
	struct statx stx;
	struct stat d;

	if (statx(dir, leaf, AT_SYMLINK_NOFOLLOW, STATX_INO, &stx) == 0 &&
	    (stx.stx_attributes_mask & STATX_ATTR_MOUNT_ROOT))
		return (stx.stx_attributes & STATX_ATTR_MOUNT_ROOT) != 0;
	return fstat(dir, &d) == 0 && d.st_dev != st->st_dev;
}

/* Should this open be an atomic upload, given what is at the target now?
 * Returns 1 (t->replaces and t->old set when a file is replaced), 0 to
 * open in place, or -1 with errno for an answer of our own (logged). */
static int wants_atomic(struct upload *t, const char *name, int flags,
                        int replace)
{
	struct stat dir;

	if (fstatat(t->dir, t->leaf, &t->old, AT_SYMLINK_NOFOLLOW) == -1)
		return errno == ENOENT && (flags & O_CREAT);
	if (!S_ISREG(t->old.st_mode) || (flags & O_EXCL) || !replace)
		return 0; /* in place: resume, append, a device, EEXIST */
	if (is_mount_point(t->dir, t->leaf, &t->old)) {
		/* Written in place, as OpenSSH's server writes it: the
		 * only way the upload can succeed at all. */
		verbose("atomic upload \"%s\": a mount point, written in "
		        "place",
		        name);
		return 0;
	}
	if (fstat(t->dir, &dir) == -1)
		return -1;
	/* OpenSSH's open(O_CREAT) of this existing file would meet
	 * fs.protected_regular, which our rename never does. */
	if ((flags & O_CREAT) && sticky_create_allowed(&dir, &t->old) != 0) {
		logit("atomic upload \"%s\": another user's file in a sticky "
		      "directory (fs.protected_regular)",
		      name);
		errno = EACCES;
		return -1;
	}
	/* Replacing needs what truncating needs, write permission on the
	 * file (EACCES as open(2) says it), besides the directory's. */
	if (faccessat(t->dir, t->leaf, W_OK, AT_EACCESS) == -1)
		return -1;
	/* In a sticky directory (/tmp's 1777) only the file's or the
	 * directory's owner may rename over it: the CLOSE would fail. */
	if ((dir.st_mode & S_ISVTX) && geteuid() != 0 &&
	    t->old.st_uid != geteuid() && dir.st_uid != geteuid()) {
		logit("atomic upload \"%s\": another user's file in a sticky "
		      "directory cannot be replaced",
		      name);
		errno = EPERM;
		return -1;
	}
	t->replaces = 1;
	return 1;
}

/* The mode a file is created with: -m's (set exactly after creation,
 * through the descriptor) or the client's, less the umask, as OpenSSH. */
static mode_t creation_mode(int mode)
{
	return srv.opt.file_mode >= 0 ? 0600 : (mode_t)mode;
}

static int force_file_mode(int fd, const char *name)
{
	if (srv.opt.file_mode < 0 || fchmod(fd, (mode_t)srv.opt.file_mode) == 0)
		return 0;
	error("-m: cannot set the mode of \"%s\": %s", name, errno_text(errno));
	return -1;
}

static struct upload *upload_new(void)
{
	struct upload *t = calloc(1, sizeof(*t));

	if (t != NULL)
		t->dir = -1;
	return t;
}

/* An atomic upload's file; *up = t on success, else t is freed. */
static int open_atomic(struct upload *t, const char *name, int flags, int mode,
                       struct upload **up)
{
	int fd, err;

	t->atomic = 1;
	t->excl = (flags & O_EXCL) != 0;
	t->created = !t->replaces;
	fd = open_temp(t, flags, t->replaces ? 0600 : creation_mode(mode));
	if (fd < 0) {
		err = errno;
		/* Where OpenSSH's server would have truncated the file. */
		if (t->replaces && (err == EACCES || err == EPERM))
			logit("atomic upload \"%s\": cannot create a new file "
			      "beside it: %s",
			      name, errno_text(err));
		upload_discard(t);
		errno = err;
		return -1;
	}
	if (t->replaces ? keep_old_attributes(t, fd, name)
	                : force_file_mode(fd, name)) {
		err = errno;
		upload_discard(t);
		close(fd);
		errno = err;
		return -1;
	}
	debug("atomic upload \"%s\": writing %s", name,
	      t->temp[0] != '\0' ? t->temp : "an unnamed file");
	*up = t;
	return fd;
}

/* Remove the file fd that an OPEN just created at name, when name still
 * is that file (not a symlink that led to it, nor a file swapped in). */
static void remove_created(const char *name, int fd)
{
	struct stat at, of;

	if (fstat(fd, &of) == 0 &&
	    (confine_active() ? confine_lstat(name, &at) : lstat(name, &at)) ==
	        0 &&
	    S_ISREG(at.st_mode) && at.st_dev == of.st_dev &&
	    at.st_ino == of.st_ino)
		(void)confine_unlink(name);
}

/* In place, as open_file() opens it; a file it creates gets -m's mode
 * (or, where the mode cannot be set, is removed again: OPEN fails). */
static int open_in_place(struct upload *t, const char *name, int *flags,
                         int mode, struct upload **up)
{
	int created = 0, fd, err;

	fd = open_file_noting(name, flags, (int)creation_mode(mode), &created);
	if (fd >= 0 && created && force_file_mode(fd, name) == -1) {
		err = errno;
		remove_created(name, fd);
		close(fd);
		errno = err;
		fd = -1;
	}
	if (fd >= 0 && t != NULL && created && srv.opt.fsync_on_close &&
	    writable(*flags)) {
		t->created = 1; /* its directory is synced at CLOSE */
		*up = t;
		return fd;
	}
	upload_discard(t);
	return fd;
}

/* The target's directory, for an atomic upload or the fsync of a new
 * file's name at CLOSE: *tp = NULL when the name is left to open(2).
 * Returns 0, or -1 with errno: a directory that cannot be found or held
 * (EMFILE, ENOMEM, ENAMETOOLONG, a link the kernel would not follow) fails
 * the OPEN rather than write in place what was to be linked in. */
static int target_of(const char *name, int flags, struct upload **tp)
{
	struct upload *t = upload_new();
	int rc;

	*tp = NULL;
	if (t == NULL)
		return -1;
	rc = find_target(name,
	                 (flags & (O_CREAT | O_EXCL)) == (O_CREAT | O_EXCL),
	                 &t->dir, t->leaf);
	if (rc == 0) {
		*tp = t;
		return 0;
	}
	upload_discard(t);
	if (rc == LEAVE_TO_OPEN)
		return 0;
	errno = -rc;
	return -1;
}

int upload_open(const char *name, int *flags, int mode, int replace,
                struct upload **up)
{
	struct upload *t = NULL;
	int atomic = srv.opt.atomic_uploads && writable(*flags) &&
	             (replace || (*flags & O_CREAT));
	int rc;

	*up = NULL;
	if ((atomic || (srv.opt.fsync_on_close && writable(*flags) &&
	                (*flags & O_CREAT))) &&
	    target_of(name, *flags, &t) == -1) {
		/* The name's own answers (ENOENT, EACCES, ELOOP, ...) are
		 * OpenSSH's and logged as its; these are ours. */
		rc = errno;
		if (rc == EMFILE || rc == ENFILE || rc == ENOMEM ||
		    rc == EAGAIN)
			logit(
			    "upload \"%s\": refused, not written in place: %s",
			    name, errno_text(rc));
		errno = rc;
		return -1;
	}
	if (atomic && t != NULL) {
		if ((rc = wants_atomic(t, name, *flags, replace)) == 1)
			return open_atomic(t, name, *flags, mode, up);
		if (rc == -1) {
			rc = errno;
			upload_discard(t);
			errno = rc;
			return -1;
		}
	}
	return open_in_place(t, name, flags, mode, up);
}

int upload_pending(const struct upload *up, int writable)
{
	return up != NULL || (srv.opt.fsync_on_close && writable);
}

int upload_names_file(const struct upload *up)
{
	return up != NULL && up->atomic;
}

const struct stat *upload_replaces(const struct upload *up)
{
	return up != NULL && up->replaces ? &up->old : NULL;
}

/* ---- CLOSE ------------------------------------------------------------ */

/* Put the finished file under the target's name.  A new target is linked
 * (or renamed, RENAME_NOREPLACE) to it directly, which fails with EEXIST
 * rather than replace what appeared meanwhile; with EXCL that is the
 * answer, otherwise the file goes under a hidden name first and is renamed
 * over the target: one step for anyone looking. */
static int link_in(struct upload *t, int fd)
{
	char hidden[NAME_MAX + 1];
	int rc, i;

	if (t->temp[0] != '\0') {
		if (!t->excl)
			rc = renameat(t->dir, t->temp, t->dir, t->leaf);
		else if ((rc = renameat2(t->dir, t->temp, t->dir, t->leaf,
		                         RENAME_NOREPLACE)) == -1 &&
		         errno == EINVAL &&
		         (rc = linkat(t->dir, t->temp, t->dir, t->leaf, 0)) ==
		             0)
			(void)unlinkat(t->dir, t->temp, 0);
		if (rc == 0)
			t->temp[0] = '\0';
		return rc;
	}
	if ((rc = link_tmpfile(fd, t->dir, t->leaf)) == 0 || errno != EEXIST ||
	    t->excl)
		return rc;
	for (i = 0; i < HIDDEN_NAME_TRIES; i++) {
		hidden_name(t->leaf, hidden);
		if ((rc = link_tmpfile(fd, t->dir, hidden)) == 0 ||
		    errno != EEXIST)
			break;
	}
	if (rc == -1)
		return -1;
	if ((rc = renameat(t->dir, hidden, t->dir, t->leaf)) == -1) {
		rc = errno;
		(void)unlinkat(t->dir, hidden, 0);
		errno = rc;
		return -1;
	}
	return 0;
}

/* fsync(2) of the directory holding the new name.  It needs a descriptor
 * open for reading: a directory the user may not read is synced with the
 * whole file system instead (syncfs of the file). */
static int sync_dir(const struct upload *t, int fd)
{
	int d = openat(t->dir, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	int rc;

	if (d < 0)
		return errno == EACCES ? syncfs(fd) : -1;
	rc = fsync(d);
	close_keeping_errno(d);
	return rc;
}

int upload_finish(struct upload *up, const char *name, int fd, int writable,
                  int failed)
{
	int atomic = up != NULL && up->atomic;
	struct stat st;
	int err = 0;

	if (atomic && failed) {
		logit("close \"%s\": upload discarded after a failed write; "
		      "the target is unchanged",
		      name);
		upload_discard(up);
		return -ECANCELED;
	}
	if (srv.opt.fsync_on_close && writable && fstat(fd, &st) == 0 &&
	    S_ISREG(st.st_mode) && fsync(fd) == -1) {
		err = errno;
		error("close \"%s\": fsync: %s", name, errno_text(err));
	}
	if (err == 0 && atomic && link_in(up, fd) == -1) {
		err = errno;
		error("close \"%s\": cannot link the upload in: %s", name,
		      errno_text(err));
	}
	if (err != 0 && atomic) {
		logit("close \"%s\": upload discarded; the target is unchanged",
		      name);
	} else if (err == 0 && up != NULL && (up->created || up->atomic) &&
	           srv.opt.fsync_on_close && sync_dir(up, fd) == -1) {
		err = errno;
		error("close \"%s\": fsync of its directory: %s", name,
		      errno_text(err));
	}
	upload_discard(up);
	return -err;
}

void upload_discard(struct upload *up)
{
	if (up == NULL)
		return;
	if (up->temp[0] != '\0')
		(void)unlinkat(up->dir, up->temp, 0);
	if (up->dir >= 0)
		close(up->dir);
	free(up);
}

/* ---- modes ------------------------------------------------------------ */

/* chmod of the directory just made, not following a symlink raced in. */
static int chmod_new_dir(int parent, const char *leaf, mode_t mode)
{
	int fd = openat(parent, leaf,
	                O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	int rc;

	if (fd < 0)
		return fchmodat(parent, leaf, mode, AT_SYMLINK_NOFOLLOW);
	rc = fchmod(fd, mode);
	close_keeping_errno(fd);
	return rc;
}

int upload_mkdir(const char *path, mode_t mode)
{
	char leaf[NAME_MAX + 1], trimmed[PATH_MAX];
	size_t len;
	int dir, err, rc;

	if (srv.opt.dir_mode < 0)
		return confine_mkdir(path, mode);
	/* Private until it has its mode. */
	if (confine_mkdir(path, 0700) == -1)
		return -1;
	len = strlcpy(trimmed, path, sizeof(trimmed));
	while (len > 1 && trimmed[len - 1] == '/')
		trimmed[--len] = '\0';
	if (confine_active()) {
		if ((dir = confine_parent(trimmed, leaf)) < 0)
			errno = -dir;
	} else if ((rc = open_parent_at(AT_FDCWD, trimmed, &dir, leaf)) != 0) {
		/* LEAVE_TO_OPEN: a name mkdir(2) made no directory under */
		errno = rc < 0 ? -rc : EINVAL;
	}
	if (dir >= 0 &&
	    chmod_new_dir(dir, leaf, (mode_t)srv.opt.dir_mode) == 0) {
		close(dir);
		return 0;
	}
	err = errno;
	error("-M: cannot set the mode of \"%s\": %s", path, errno_text(err));
	if (dir >= 0) {
		(void)unlinkat(dir, leaf, AT_REMOVEDIR);
		close(dir);
	}
	errno = err;
	return -1;
}

unsigned upload_descriptors_per_handle(void)
{
	return srv.opt.atomic_uploads || srv.opt.fsync_on_close ? 2 : 1;
}

int upload_mkdir_one_call(void)
{
	return srv.opt.dir_mode < 0;
}

int upload_modes_forced(void)
{
	return srv.opt.file_mode >= 0 || srv.opt.dir_mode >= 0;
}

int upload_mode_forced(mode_t st_mode, mode_t *forced)
{
	int m = S_ISREG(st_mode)   ? srv.opt.file_mode
	        : S_ISDIR(st_mode) ? srv.opt.dir_mode
	                           : -1;

	if (m < 0)
		return 0;
	*forced = (mode_t)m;
	return 1;
}
