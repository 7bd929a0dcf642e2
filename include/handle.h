/* SPDX-License-Identifier: ISC
 * Copyright (c) 2026 The uring-sftp-server developers.  See LICENSE. */
/* Open file and directory handles.  On the wire a handle is the 4-byte
 * big-endian slot index, as OpenSSH sends it. */
#ifndef HANDLE_H
#define HANDLE_H

#include <dirent.h>
#include <stdint.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <time.h>

#include "buf.h"
#include "direct.h"
#include "nocache.h"
#include "residency.h"

/* HANDLE_RESERVED: taken for an OPEN still running, so that handles are
 * numbered in arrival order (handle_reserve). */
enum handle_kind {
	HANDLE_UNUSED = 0,
	HANDLE_DIR,
	HANDLE_FILE,
	HANDLE_RESERVED
};

struct handle {
	enum handle_kind kind;
	int fd;
	DIR *dirp;
	int flags; /* open(2) flags, for O_APPEND */
	char *name;
	uint64_t bytes_read;
	uint64_t bytes_written;
	dev_t dev; /* identity of the open file, for overlap ordering */
	ino_t ino;
	int is_regular;     /* short reads are resumed only on regular files */
	mode_t type;        /* st_mode & S_IFMT at open (0 if unknown) */
	uint64_t next_read; /* where a sequential READ stream continues */
	uint64_t ahead_until;         /* read-ahead asked for up to here */
	struct residency residency;   /* how its cache is asked (residency.h) */
	struct nocache_state nocache; /* --nocache (nocache.h) */
	struct direct_state direct;   /* cold random READs (direct.h) */
	int hint_waiting;       /* READs waiting for READ memory get hints of
	                         * their own (readahead_fs_hints_waiting) */
	struct timespec opened; /* monotonic, for the transfer log */
	int write_failed;       /* the last WRITE failed (transfer log) */
	int writes_failed;      /* any WRITE (or copy-data into it) failed */
	int upload_lost;        /* CLOSE could not finish it (transfer log) */
	struct upload *upload;  /* what CLOSE must do (upload.h), or NULL */
	char *order_path;       /* name made absolute, for the ordering rule
	                         * (order.h); NULL: it has ".." */
	int next_free;
};

/* Take a slot; fstat()s fd (when >= 0) for dev/ino.  Returns the index, or
 * -1 with errno set (EMFILE past the handle limit). */
int handle_new(enum handle_kind kind, const char *name, int fd, DIR *dirp,
               int flags);
/* The same with what fstat() said of fd already (NULL: nothing known). */
int handle_new_stat(enum handle_kind kind, const char *name, int fd, DIR *dirp,
                    int flags, const struct stat *st);
/* The same in two steps: take a slot now (an OPEN as it starts, in
 * arrival order; handle_get does not see it), and fill it once the file
 * is open, or give it back.  handle_reserve: the index, or -1 with errno
 * (EMFILE past the limit); handle_fill: 0, or -1 out of memory. */
int handle_reserve(void);
int handle_fill(int idx, enum handle_kind kind, const char *name, int fd,
                DIR *dirp, int flags, const struct stat *st);
void handle_unreserve(int idx);
/* Are descriptors plentiful: fewer than half the handles the descriptor
 * limit allows in use?  Then a handle may hold a second one for a while
 * (direct.h). */
int handle_descriptors_to_spare(void);
/* The handle at idx if it is in use and of kind (HANDLE_UNUSED = any). */
struct handle *handle_get(int idx, enum handle_kind kind);
/* The handle's path for log lines, "(null)" when idx is not a handle. */
const char *handle_name(int idx);
/* Read a handle string: *idx = slot or -1 when it is not a 4-byte handle.
 * Returns a BUF_* code (only a short packet is an error). */
int handle_parse(struct rbuf *r, int *idx);
int handle_put(struct wbuf *w, int idx);
/* Close and free the slot: close()/closedir() result, -1 with errno.  An
 * upload still pending (h->upload) is discarded: CLOSE finishes it with
 * upload_finish() first and clears h->upload. */
int handle_close(int idx);
/* Free the slot and hand over what it held, to be closed by the caller
 * (elsewhere: close(2) may wait on the storage): the descriptor of a file
 * handle (else -1), the DIR of a directory handle (else NULL).  0, or -1
 * when idx is not a handle. */
int handle_detach(int idx, int *fd, DIR **dirp);
/* Where OpenSSH's lseek(fd, off, SEEK_SET) before a read or write would
 * leave the file: 0 with *pos set, or -errno.  A regular file is not
 * asked (we read and write it at an offset; past INT64_MAX is EINVAL, as
 * there); anything else is (a FIFO gives ESPIPE, /dev/null may put any
 * offset at 0). */
int handle_seek(const struct handle *h, uint64_t off, uint64_t *pos);
/* --xferlog's line for a file handle being closed: complete unless its
 * last WRITE failed, CLOSE could not finish the upload (upload_lost), or
 * the session is ending with it still open (forced). */
void handle_log_transfer(const struct handle *h, int forced);
/* At exit: "forced close"/"forced closedir" log lines, then close all. */
void handle_close_all(void);
/* Number of slots in use; the limit (set from RLIMIT_NOFILE at start). */
unsigned handle_count(void);
void handle_set_limit(unsigned max);
/* How many handles can be open at once with nofile descriptors, reserved
 * of them kept for other uses and per_handle held by each handle: what
 * limits@openssh.com advertises. */
uint64_t handle_limit_for(uint64_t nofile, unsigned reserved,
                          unsigned per_handle);

#endif
