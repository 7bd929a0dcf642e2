/* SPDX-License-Identifier: ISC
 * Copyright (c) 2026 The uring-sftp-server developers.  See LICENSE. */
/* --confine: the session may touch nothing outside one directory tree.
 * Landlock enforces it in the kernel for every file access it governs;
 * confine_resolve is the one place that resolves client paths, beneath
 * that directory, for what Landlock does not govern (stat, readlink,
 * statvfs, chmod, chown, utimes). */
#ifndef CONFINE_H
#define CONFINE_H

#include <sys/stat.h>
#include <sys/statvfs.h>
#include <sys/types.h>

/* Set up the confinement to dir, an absolute path as configured (not
 * resolved: it is opened without following symlinks, and refused when
 * anyone but root and its owner could move it; confine.c says the rule).
 * Moves into DIR when the current directory is not beneath it, then
 * restricts the process with Landlock.  Fails closed: any problem,
 * Landlock missing included, is a fatal log line naming it and exit
 * status CONFINE_EXIT. */
#define CONFINE_EXIT 1
void confine_start(const char *dir);

/* Would dir (absolute, as confine_start takes it) pass confine_start's
 * rule for the confinement directory?  1, or 0 with the reason in why
 * (--check, hostcheck.c). */
int confine_dir_usable(const char *dir, char *why, size_t why_size);
/* The kernel's Landlock ABI version (less, when a test acts as an older
 * kernel: testkernel.h), or -errno (ENOSYS: no Landlock; EOPNOTSUPP:
 * built in but not enabled at boot). */
int confine_landlock_abi(void);
/* What Landlock cannot do at ABI abi that a later one can: the next such
 * sentence from *i on (start at 0), or NULL after the last. */
const char *confine_landlock_gap(int abi, unsigned *i);

/* Is the session confined? */
int confine_active(void);

/* The confinement directory, canonical (no symlinks). */
const char *confine_root(void);
/* The start directory, canonical, beneath confine_root(). */
const char *confine_start_dir(void);

/*
 * OpenSSH allows SYMLOOP_MAX (32 where the system has none) links and
 * gives up on the next one after that, so 33 links resolve and the 34th
 * is ELOOP.  Here rather than in realpath.h: sftp_realpath and
 * confine_resolve's CONFINE_REALPATH mode both count to it, and
 * realpath.c already depends on this module.
 */
#define REALPATH_LINKS_ALLOWED 33

/*
 * Resolve a client path beneath the confinement directory into resolved
 * (PATH_MAX bytes): an absolute path with no symlink in it, except the
 * last component without CONFINE_FOLLOW.  A missing last component is
 * fine.  Relative paths start at the start directory; absolute ones must
 * lie under the confinement directory, as do symlink targets on the way.
 * The kernel's rules apply (40 links, "file/.." is ENOTDIR, "dir/" must be
 * a directory), or with CONFINE_REALPATH those of OpenSSH's realpath
 * (realpath.c).  Returns 0, or -errno: -EACCES (logged) for anything that
 * would leave the directory, -ENOENT, -ENOTDIR, -ELOOP, -ENAMETOOLONG as
 * the kernel would say them.  Callable only while confine_active().
 */
#define CONFINE_FOLLOW 1   /* follow a final symlink */
#define CONFINE_REALPATH 2 /* OpenSSH's realpath rules */
int confine_resolve(const char *path, int flags, char *resolved);

/*
 * Calls by path on a path confine_resolve gave, made from a descriptor of
 * the directory holding its last component, walked again from DIR with no
 * symlink allowed, and never following the last component (the resolution
 * already did where the request wanted it).  A directory swapped for a
 * symlink since the resolution then fails (ENOTDIR, ELOOP) instead of
 * leading out.  As lstat(2), readlink(2), statvfs(3) and open(2).
 */
int confine_lstat(const char *resolved, struct stat *st);
ssize_t confine_readlink(const char *resolved, char *buf, size_t size);
int confine_statvfs(const char *resolved, struct statvfs *st);
/* As open(2), with O_NOFOLLOW added. */
int confine_open(const char *resolved, int flags, mode_t mode);
/* That directory's descriptor (the caller closes it), with the last
 * component in leaf (NAME_MAX + 1 bytes; "." for DIR itself); or -errno. */
int confine_parent(const char *resolved, char *leaf);

/*
 * As unlink(2), rmdir(2), mkdir(2), symlink(2), rename(2) and link(2)
 * (plain calls without --confine); under it, on paths confine_resolve
 * gave, made from the descriptors confine_parent gives, so that a raced
 * swap fails instead of looking names up outside.
 */
int confine_unlink(const char *path);
int confine_rmdir(const char *path);
int confine_mkdir(const char *path, mode_t mode);
int confine_symlink(const char *target, const char *path);
int confine_rename(const char *from, const char *to);
int confine_link(const char *from, const char *to);

#endif
