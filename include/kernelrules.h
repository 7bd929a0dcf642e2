/* SPDX-License-Identifier: ISC
 * Copyright (c) 2026 The uring-sftp-server developers.  See LICENSE. */
/* The kernel's rules for the few places where the server follows a link
 * or opens a name in a way the kernel does not see as OpenSSH's server's
 * open(2) would (doc/design.md, "Where the server resolves paths itself"):
 * fs.protected_symlinks for a final symlink it follows by reading it, and
 * fs.protected_regular / fs.protected_fifos for an atomic upload that
 * replaces a file instead of opening it with O_CREAT.  The decisions are
 * pure functions of their inputs; the wrappers ask the kernel, or read the
 * sysctls at the moment of use. */
#ifndef KERNELRULES_H
#define KERNELRULES_H

#include <sys/stat.h>
#include <sys/types.h>

/* The sysctl levels in force, as the kernel names them. */
struct protected_levels {
	int regular; /* fs.protected_regular: 0, 1 or 2 */
	int fifos;   /* fs.protected_fifos: 0, 1 or 2 */
};

/* The kernel's may_create_in_sticky (fs.protected_regular and
 * fs.protected_fifos): may a user with this fsuid open an existing file
 * st in a directory dir with O_CREAT?  0, or -EACCES. */
int sticky_create_rule(const struct protected_levels *lv, uid_t fsuid,
                       const struct stat *dir, const struct stat *st);

/* Open the sysctl files now, while the confinement (Landlock) still lets
 * us: they are read through these descriptors at every use (else each
 * use opens them).  Called once at start under --confine with
 * --atomic-uploads; without /proc the levels are taken as 1. */
void kernelrules_init(void);

/* Descriptors kernelrules_init keeps open. */
unsigned kernelrules_descriptors(void);

/* sticky_create_rule with the levels in force now and our fsuid. */
int sticky_create_allowed(const struct stat *dir, const struct stat *st);

/* Would the kernel follow the symlink name in dir as the last component
 * of a path (fs.protected_symlinks, a nosymfollow mount, too many links)?
 * Asked of the kernel by opening name through it (O_PATH, not beyond dir
 * where openat2 exists); link is the symlink the caller read (fstat of
 * its O_PATH descriptor), which must still be the one at name.  0, or
 * -EACCES / -ELOOP (also when the name changed meanwhile: -EAGAIN). */
int kernel_follows_link(int dir, const char *name, const struct stat *link);

#endif
