/* SPDX-License-Identifier: ISC
 * Copyright (c) 2026 The uring-sftp-server developers.  See LICENSE. */
/* Applying attributes: see setstat.h. */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <sys/stat.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

#include "confine.h"
#include "log.h"
#include "setstat.h"
#include "sftp.h"
#include "status.h"
#include "upload.h"

/* What the set_* calls act on: a descriptor (SETSTAT_FD), a path, or under
 * --confine a name in a directory descriptor (dir >= 0), never following a
 * final symlink (the resolution did where the request wanted it). */
struct set_target {
	const char *name;
	int fd;
	int dir;
	enum setstat_target t;
};

/* truncate(2) of a name in a directory: through a descriptor opened
 * without following a symlink, with truncate's answers for what is not a
 * regular file. */
static int truncate_at(int dir, const char *name, off_t size)
{
	struct stat st;
	int fd, rc, err;

	if (fstatat(dir, name, &st, AT_SYMLINK_NOFOLLOW) == -1)
		return -1;
	if (!S_ISREG(st.st_mode)) {
		errno = S_ISDIR(st.st_mode) ? EISDIR : EINVAL;
		return -1;
	}
	fd = openat(dir, name,
	            O_WRONLY | O_NOFOLLOW | O_NONBLOCK | O_NOCTTY | O_CLOEXEC);
	if (fd == -1)
		return -1;
	rc = ftruncate(fd, size);
	err = errno;
	close(fd);
	errno = err;
	return rc;
}

/* chmod of a name in a directory, not following a final symlink.  Before
 * fchmodat2 (Linux 6.6, glibc 2.39) glibc does that through /proc and says
 * EOPNOTSUPP without it.  Then the name is opened without following it
 * (to read, or else to write) and changed through the descriptor: looking
 * first and then calling fchmodat would follow a symlink swapped in
 * meanwhile, out of --confine's directory (chmod is no Landlock right).
 * What can be neither read nor written keeps its mode there. */
static int chmod_at(int dir, const char *name, mode_t mode)
{
	const int how = O_NOFOLLOW | O_NONBLOCK | O_NOCTTY | O_CLOEXEC;
	int fd, rc, err;

	if (fchmodat(dir, name, mode, AT_SYMLINK_NOFOLLOW) == 0)
		return 0;
	if (errno != EOPNOTSUPP)
		return -1;
	fd = openat(dir, name, O_RDONLY | how);
	if (fd == -1 && errno == EACCES)
		fd = openat(dir, name, O_WRONLY | how);
	if (fd == -1) {
		if (errno == ELOOP)
			errno = EOPNOTSUPP; /* a symlink, as glibc says */
		return -1;
	}
	rc = fchmod(fd, mode);
	err = errno;
	close(fd);
	errno = err;
	return rc;
}

static int set_size(const struct set_target *tg, uint64_t size)
{
	if (tg->t == SETSTAT_FD)
		return ftruncate(tg->fd, (off_t)size);
	if (tg->dir >= 0)
		return truncate_at(tg->dir, tg->name, (off_t)size);
	return truncate(tg->name, (off_t)size);
}

static int set_mode(const struct set_target *tg, mode_t mode)
{
	if (tg->t == SETSTAT_FD)
		return fchmod(tg->fd, mode);
	if (tg->dir >= 0)
		return chmod_at(tg->dir, tg->name, mode);
	if (tg->t == SETSTAT_NOFOLLOW)
		return fchmodat(AT_FDCWD, tg->name, mode, AT_SYMLINK_NOFOLLOW);
	return chmod(tg->name, mode);
}

static int nofollow_flag(const struct set_target *tg)
{
	return tg->dir >= 0 || tg->t == SETSTAT_NOFOLLOW ? AT_SYMLINK_NOFOLLOW
	                                                 : 0;
}

static int set_times(const struct set_target *tg, const struct attrib *a)
{
	struct timespec ts[2] = {{.tv_sec = a->atime}, {.tv_sec = a->mtime}};

	if (tg->t == SETSTAT_FD)
		return futimens(tg->fd, ts);
	return utimensat(tg->dir >= 0 ? tg->dir : AT_FDCWD, tg->name, ts,
	                 nofollow_flag(tg));
}

static int set_owner(const struct set_target *tg, const struct attrib *a)
{
	if (tg->t == SETSTAT_FD)
		return fchown(tg->fd, a->uid, a->gid);
	return fchownat(tg->dir >= 0 ? tg->dir : AT_FDCWD, tg->name, a->uid,
	                a->gid, nofollow_flag(tg));
}

/* -m and -M force the mode of the files and directories the server
 * creates, and permission changes of those types are then ignored: the
 * mode is set to what it already is, so the answer is the one the change
 * would have got (PERMISSION_DENIED on another user's file), and the rest
 * of the request applies.  Returns 0 when perm is to be set, else 1 with
 * *mode the file's own. */
static int mode_change_ignored(const struct set_target *tg, const char *name,
                               uint32_t perm, mode_t *mode)
{
	struct stat st;
	mode_t forced;
	int rc;

	if (!upload_modes_forced())
		return 0;
	if (tg->t == SETSTAT_FD)
		rc = fstat(tg->fd, &st);
	else if (tg->dir >= 0 || tg->t == SETSTAT_NOFOLLOW)
		rc = fstatat(tg->dir >= 0 ? tg->dir : AT_FDCWD, tg->name, &st,
		             AT_SYMLINK_NOFOLLOW);
	else
		rc = stat(tg->name, &st);
	if (rc == -1 || !upload_mode_forced(st.st_mode, &forced))
		return 0;
	logit("set \"%s\" mode %04o ignored: %s %04o", name, perm,
	      S_ISDIR(st.st_mode) ? "-M" : "-m", (unsigned)forced);
	*mode = st.st_mode & 07777;
	return 1;
}

/* The modtime log line shows the new mtime in local time, as OpenSSH's
 * does. */
static void log_modtime(const char *name, uint32_t mtime)
{
	time_t t = mtime;
	struct tm tm;
	char when[64];

	/* localtime_r: FSETSTAT and SETSTAT run in worker threads too. */
	if (localtime_r(&t, &tm) == NULL ||
	    strftime(when, sizeof(when), "%Y%m%d-%H:%M:%S", &tm) == 0)
		snprintf(when, sizeof(when), "%lld", (long long)t);
	logit("set \"%s\" modtime %s", name, when);
}

uint32_t apply_attrib(const char *name, int fd, const struct attrib *a,
                      enum setstat_target t)
{
	struct set_target tg = {.name = name, .fd = fd, .dir = -1, .t = t};
	char leaf[NAME_MAX + 1];
	uint32_t status = SSH2_FX_OK;
	mode_t mode;

	/* A confined path is acted on from its directory's descriptor: a
	 * directory swapped for a symlink since it was resolved cannot lead
	 * out (see confine_parent). */
	if (confine_active() && t != SETSTAT_FD) {
		tg.dir = confine_parent(name, leaf);
		if (tg.dir < 0)
			return errno_to_status(-tg.dir);
		tg.name = leaf;
	}
	/* Every step runs even after a failure; the last failure wins. */
	if (a->flags & SSH2_FILEXFER_ATTR_SIZE) {
		logit("set \"%s\" size %llu", name,
		      (unsigned long long)a->size);
		if (set_size(&tg, a->size) == -1)
			status = errno_to_status(errno);
	}
	if (a->flags & SSH2_FILEXFER_ATTR_PERMISSIONS) {
		mode = a->perm & 07777;
		if (!mode_change_ignored(&tg, name, a->perm, &mode))
			logit("set \"%s\" mode %04o", name, a->perm);
		if (set_mode(&tg, mode) == -1)
			status = errno_to_status(errno);
	}
	if (a->flags & SSH2_FILEXFER_ATTR_ACMODTIME) {
		log_modtime(name, a->mtime);
		if (set_times(&tg, a) == -1)
			status = errno_to_status(errno);
	}
	if (a->flags & SSH2_FILEXFER_ATTR_UIDGID) {
		logit("set \"%s\" owner %lu group %lu", name,
		      (unsigned long)a->uid, (unsigned long)a->gid);
		if (set_owner(&tg, a) == -1)
			status = errno_to_status(errno);
	}
	if (tg.dir >= 0)
		close(tg.dir);
	return status;
}
