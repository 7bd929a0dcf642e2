/* SPDX-License-Identifier: ISC
 * Copyright (c) 2026 The uring-sftp-server developers.  See LICENSE. */
/* The kernel's rules where the server follows a link or replaces a file
 * itself (kernelrules.h).  The rules, as Documentation/admin-guide/sysctl/
 * fs.rst and fs/namei.c state them:
 *
 *   protected_symlinks  a symlink met as the last component of a path (or
 *                       of a followed link's target) in a sticky
 *                       world-writable directory is followed only when
 *                       the follower's fsuid owns it or the directory's
 *                       owner does; root included.  Links met in the
 *                       middle of a path are not checked.
 *   protected_regular,  an O_CREAT open of an existing regular file (FIFO)
 *   protected_fifos     in a sticky directory fails when neither the
 *                       opener nor the directory's owner owns it and the
 *                       directory is world-writable (level 1), or
 *                       group-writable too (level 2); root included.
 *
 * The first is left to the kernel: we open the link through it and read
 * its answer, so the sysctl's value now, idmapped mounts, nosymfollow
 * mounts and security modules all count.  The second cannot be (the
 * kernel applies it only to an O_CREAT open of the file itself, which an
 * atomic upload never makes: opening the target for writing would tell
 * watchers it was written), so it is the pure rule below, fed with the
 * sysctls read at the moment of use. */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "kernelrules.h"
#include "log.h"

#ifdef SYS_openat2
#include <linux/openat2.h>
#endif

int sticky_create_rule(const struct protected_levels *lv, uid_t fsuid,
                       const struct stat *dir, const struct stat *st)
{
	int level;

	if (!(dir->st_mode & S_ISVTX))
		return 0;
	if (S_ISREG(st->st_mode))
		level = lv->regular;
	else if (S_ISFIFO(st->st_mode))
		level = lv->fifos;
	else
		return 0;
	if (level == 0 || st->st_uid == dir->st_uid || st->st_uid == fsuid)
		return 0;
	if (dir->st_mode & S_IWOTH)
		return -EACCES;
	if (level >= 2 && (dir->st_mode & S_IWGRP))
		return -EACCES;
	return 0;
}

/* ---- the sysctls, read at every use --------------------------------- */

#define REGULAR_PATH "/proc/sys/fs/protected_regular"
#define FIFOS_PATH "/proc/sys/fs/protected_fifos"

/* Kept open under --confine only: elsewhere each use opens the file. */
static int regular_fd = -1, fifos_fd = -1;

static int open_sysctl(const char *path)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);

	if (fd < 0)
		debug("%s: %s: taken as 1", path, errno_text(errno));
	return fd;
}

void kernelrules_init(void)
{
	if (regular_fd < 0)
		regular_fd = open_sysctl(REGULAR_PATH);
	if (fifos_fd < 0)
		fifos_fd = open_sysctl(FIFOS_PATH);
}

unsigned kernelrules_descriptors(void)
{
	return (regular_fd >= 0) + (fifos_fd >= 0);
}

/* The level now, through fd or else by opening path; 1 (what
 * distributions set) where it cannot be read: in a chroot without /proc. */
static int read_level(int fd, const char *path)
{
	char buf[16];
	ssize_t n;
	int own = fd < 0;

	if (own && (fd = open_sysctl(path)) < 0)
		return 1;
	n = pread(fd, buf, sizeof(buf) - 1, 0);
	if (own)
		close(fd);
	if (n <= 0)
		return 1;
	buf[n] = '\0';
	return atoi(buf);
}

int sticky_create_allowed(const struct stat *dir, const struct stat *st)
{
	struct protected_levels lv;

	if (!(dir->st_mode & S_ISVTX))
		return 0; /* not sticky: no need to read anything */
	lv.regular = read_level(regular_fd, REGULAR_PATH);
	lv.fifos = read_level(fifos_fd, FIFOS_PATH);
	return sticky_create_rule(&lv, geteuid(), dir, st);
}

/* ---- following a final symlink -------------------------------------- */

/* The kernel's walk from dir through name, following it, going nowhere
 * above dir where it can say so (openat2, Linux 5.6). */
static int open_following(int dir, const char *name)
{
#ifdef SYS_openat2
	struct open_how how = {
	    .flags = O_PATH | O_CLOEXEC,
	    .resolve = RESOLVE_BENEATH | RESOLVE_NO_MAGICLINKS,
	};
	int fd = (int)syscall(SYS_openat2, dir, name, &how, sizeof(how));

	if (fd >= 0 || (errno != ENOSYS && errno != EPERM))
		return fd;
#endif
	return openat(dir, name, O_PATH | O_CLOEXEC);
}

int kernel_follows_link(int dir, const char *name, const struct stat *link)
{
	struct stat now;
	int fd = open_following(dir, name), err = errno;

	if (fd >= 0)
		close(fd);
	/* The kernel checks the link itself before its target: EACCES and
	 * ELOOP are about following (or about the target, which the caller
	 * would meet next anyway); anything else (ENOENT, EXDEV beyond dir)
	 * says the link itself was followed. */
	if (fd < 0 && (err == EACCES || err == ELOOP))
		return -err;
	/* The answer was about this link only if it is still at name: a
	 * link swapped in meanwhile may have another owner. */
	if (fstatat(dir, name, &now, AT_SYMLINK_NOFOLLOW) == -1 ||
	    now.st_dev != link->st_dev || now.st_ino != link->st_ino)
		return -EAGAIN;
	return 0;
}
