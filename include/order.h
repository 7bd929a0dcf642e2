/* SPDX-License-Identifier: ISC
 * Copyright (c) 2026 The uring-sftp-server developers.  See LICENSE. */
/* The ordering rule, in one place.  Requests start in arrival order and
 * their replies leave in arrival order; a request may start while earlier
 * ones are still running unless one could see the other's effects.  What
 * a path names is not known without asking the storage (a symlink or a
 * hard link gives a file more names, a rename moves what an open handle
 * is called), so the rule judges paths by what a request does to them,
 * not by comparing names:
 *
 *  - a request that changes paths (creates, removes, renames, links, sets
 *    attributes by path, opens to write, create or truncate) runs alone
 *    among requests that use paths or handles: after those before it have
 *    finished, before those after it start;
 *  - a request that changes an open file (FSETSTAT) runs alone among
 *    requests that use paths, and waits for requests on its file;
 *  - READ and WRITE of one file (by device and inode): two WRITEs (in
 *    arrival order, so that a disk that fills up fails the same ones as
 *    OpenSSH's would), or a READ and a WRITE that ends past the READ's
 *    start (growing the file turns an EOF into data); any two of a file
 *    that is not a regular one (a FIFO, a device, a /proc or /sys file,
 *    which are read where the last read left them); a request on
 *    a handle and a READ or WRITE of its file; a WRITE and any request
 *    that looks at paths; a READ or WRITE and any that changes them;
 *  - any two requests on one handle run in arrival order, and an OPEN or
 *    OPENDIR waits for (and holds up) a request naming a handle that is
 *    not open: the one it will make, if a client guessed its number;
 *  - a request that reports what a handle's file cannot say alone
 *    (READDIR lists a directory's files, fstatvfs the file system's free
 *    space) waits for every WRITE and FSETSTAT before it, of any file, as
 *    a request on paths does: it must see every change requested before
 *    it, and which files it reports on is not known without asking;
 *  - a request that reports free space (statvfs, fstatvfs) waits for
 *    every CLOSE before it too: closing a removed file frees its space;
 *  - requests that only look (STAT, LSTAT, READLINK, REALPATH, statvfs,
 *    OPEN for reading, OPENDIR, FSTAT, READDIR, fstatvfs, CLOSE) run
 *    together, and beside READs;
 *  - everything else (INIT, copy-data, unknown extensions...) is a
 *    barrier: it waits for everything before it and holds up everything
 *    after it. */
#ifndef ORDER_H
#define ORDER_H

#include <stdint.h>
#include <sys/types.h>

enum order_class {
	ORDER_BARRIER = 0,
	ORDER_IO,            /* READ, WRITE, a check-file step */
	ORDER_PATH_READ,     /* looks at paths */
	ORDER_PATH_WRITE,    /* changes what paths name or hold */
	ORDER_HANDLE_READ,   /* looks at an open handle's file, or closes it */
	ORDER_HANDLE_WRITE,  /* changes it */
	ORDER_HANDLE_SURVEY, /* looks through an open handle at more than its
	                      * file: READDIR, fstatvfs */
};

/* What a request names, for the rule. */
struct order_scope {
	enum order_class cls;
	int handle;         /* -1: none */
	int handle_unknown; /* handle names no open handle now */
	int opens_handle;   /* OPEN, OPENDIR: will make a handle */
	int has_file;       /* dev and ino name the file */
	dev_t dev;
	ino_t ino;
	uint64_t start, end; /* ORDER_IO: the byte range */
	int range_unknown;   /* ORDER_IO before its handler ran: the range
	                      * is judged once it did */
	int writes;          /* ORDER_IO: a WRITE */
	int in_order;        /* ORDER_IO of a file that is not a regular one
	                      * (a FIFO, a device, /proc): all its I/O runs
	                      * in arrival order, as its position moves */
	int closes;          /* CLOSE: may free a removed file's space */
	int counts_space;    /* statvfs, fstatvfs: reports free space */
};

/* May a and b not run at the same time (either came first)? */
int order_conflict(const struct order_scope *a, const struct order_scope *b);

#endif
