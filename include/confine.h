/* --confine: the session may touch nothing outside one directory tree.
 * Landlock enforces it in the kernel for every file access it governs;
 * confine_resolve is the one place that resolves client paths, beneath
 * that directory, for what Landlock does not govern (stat, readlink,
 * statvfs, chmod, chown, utimes). */
#ifndef CONFINE_H
#define CONFINE_H

/* Set up the confinement: DIR (NULL: the current directory, i.e. the
 * start directory) must exist.  start_dir is -d as given (or NULL): with
 * DIR NULL, clients may also name the directory that way when it is
 * absolute.  Moves into DIR when the current directory is not beneath it,
 * then restricts the process with Landlock.  Fails closed: any problem,
 * Landlock missing included, is a fatal log line and exit status
 * CONFINE_EXIT. */
#define CONFINE_EXIT 1
void confine_start(const char *dir, const char *start_dir);

/* Is the session confined? */
int confine_active(void);

/* The confinement directory, canonical (no symlinks). */
const char *confine_root(void);
/* The start directory, canonical, beneath confine_root(). */
const char *confine_start_dir(void);

/*
 * Resolve a client path beneath the confinement directory into resolved
 * (PATH_MAX bytes): an absolute path with no symlink in it, except the
 * last component when follow_last is 0.  A missing last component is
 * fine.  Relative paths start at the start directory; absolute ones must
 * lie under the confinement directory, as do symlink targets on the way.
 * Returns 0, or -errno: -EACCES (logged) for anything that would leave
 * the directory, -ENOENT, -ENOTDIR, -ELOOP, -ENAMETOOLONG as the kernel
 * would say them.  Callable only while confine_active().
 */
int confine_resolve(const char *path, int follow_last, char *resolved);

#endif
