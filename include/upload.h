/* SPDX-License-Identifier: ISC
 * Copyright (c) 2026 The uring-sftp-server developers.  See LICENSE. */
/* What the server does to the files and directories it creates and to the
 * files it writes through a handle, beyond OpenSSH's server:
 *
 *   --atomic-uploads  an OPEN for writing that creates or truncates a
 *                     regular file writes an unnamed file (O_TMPFILE) in
 *                     the target's directory, or a hidden uniquely named
 *                     one where the file system has no O_TMPFILE; CLOSE
 *                     links it in under the target's name in one step;
 *   -m, -M            the exact mode of every file and directory created;
 *   --fsync-on-close  CLOSE answers once the file, and the name of a new
 *                     one, are on stable storage.
 *
 * Every open of a client's path goes through here too (open_file).
 * OPEN, CLOSE, MKDIR, SETSTAT/FSETSTAT and copy-file call these.  They
 * work on names and descriptors only and keep their state in a struct
 * upload the caller holds (a handle's), never in the handle table or the
 * queue, so they can run wherever their callers run. */
#ifndef UPLOAD_H
#define UPLOAD_H

#include <sys/stat.h>
#include <sys/types.h>

/* What CLOSE still has to do for one open file. */
struct upload;

/* open(2) of a client's path, for every request that opens one (OPEN,
 * check-file-name, copy-file): beneath the confinement directory under
 * --confine, a FIFO without waiting (O_NONBLOCK is added to *flags).  -1
 * with errno set on failure. */
int open_file(const char *name, int *flags, int mode);
/* open_file, and *created = 1 when the open made the file (nothing was
 * at the name when it looked first). */
int open_file_noting(const char *name, int *flags, int mode, int *created);

/*
 * open(2) of OPEN's path (or copy-file's destination), as open_file()
 * opens it, except:
 *   - with --atomic-uploads, when the open is for writing and creates a
 *     new regular file (CREATE, the name absent) or replaces one (replace:
 *     OPEN's TRUNCATE, copy-file's overwrite; the name a regular file, not
 *     with EXCL), the descriptor is a new file in the target's directory
 *     that no other process finds by name until upload_finish;
 *   - a file created gets -m's mode exactly, whatever mode asked for and
 *     the umask (a replaced file keeps the old one's permission bits and,
 *     where it can, owner and group).
 * *up is what upload_finish needs (NULL when nothing).  Returns the
 * descriptor, or -1 with errno set.
 */
int upload_open(const char *name, int *flags, int mode, int replace,
                struct upload **up);
/* The existing file an atomic upload is to replace, as it was at OPEN;
 * NULL when there is none (copy-file's check of its destination). */
const struct stat *upload_replaces(const struct upload *up);
/*
 * CLOSE of a descriptor upload_open gave (before closing it): with
 * --fsync-on-close a writable regular file is fsync'ed, then an atomic
 * upload is linked in under its name, then a new name's directory is
 * fsync'ed.  An atomic upload whose writes failed (failed), or whose
 * fsync or link fails, is discarded: the target keeps its old contents.
 * name is the client's, for log lines.  Frees up (may be NULL).  Returns
 * 0, -ECANCELED when it was discarded for failed writes, or -errno.
 */
int upload_finish(struct upload *up, const char *name, int fd, int writable,
                  int failed);
/* A file that is never finished (its session ends, the OPEN fails after
 * all): a hidden temporary name is removed, nothing is linked in.  Frees
 * up (may be NULL).  Thread-safe, as the others: state is up's alone. */
void upload_discard(struct upload *up);
/* Has CLOSE of a file (opened for writing or not) work for
 * upload_finish?  Its up, or --fsync-on-close of a writable file. */
int upload_pending(const struct upload *up, int writable);
/* Does CLOSE put the file under a name (an atomic upload): for the
 * ordering rule, CLOSE then changes paths. */
int upload_names_file(const struct upload *up);

/* How an atomic upload into the directory dir (a descriptor) would be
 * written, as the first upload_open finds it (--check, hostcheck.c): an
 * unnamed O_TMPFILE file linked in by descriptor or through /proc, or a
 * hidden named file (*err: why not O_TMPFILE, 0 when it was the link);
 * UNKNOWN with *err when O_TMPFILE gave another answer (EACCES, EROFS:
 * the directory takes no new file). */
enum upload_way {
	UPLOAD_WAY_LINK_FD,
	UPLOAD_WAY_LINK_PROC,
	UPLOAD_WAY_NAMED,
	UPLOAD_WAY_UNKNOWN,
};
enum upload_way upload_probe_way(int dir, int *err);

/* MKDIR: mkdir(2) of a client's path (through confine_mkdir), then -M's
 * mode exactly.  -1 with errno set on failure (nothing is left then). */
int upload_mkdir(const char *path, mode_t mode);
/* Is upload_mkdir one mkdir(2) of (path, mode), so that the ring may make
 * it (no -M: see route.h)? */
int upload_mkdir_one_call(void);
/* Are permission changes (SETSTAT, FSETSTAT, lsetstat) of a file of this
 * type (st_mode) ignored, because -m or -M forces its mode?  Then *forced
 * is that mode. */
int upload_mode_forced(mode_t st_mode, mode_t *forced);
/* Descriptors one handle may hold: 2 where an atomic upload, or a file
 * --fsync-on-close creates, holds its directory's besides its own. */
unsigned upload_descriptors_per_handle(void);

/* Is -m or -M set (else upload_mode_forced is 0 for every type)? */
int upload_modes_forced(void);

#endif
