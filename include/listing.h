/* SPDX-License-Identifier: ISC
 * Copyright (c) 2026 The uring-sftp-server developers.  See LICENSE. */
/* READDIR's entries: the next names of a directory, and the lstat of each.
 * On network storage every lstat is a round trip; a batch's entries are
 * then looked up by several worker threads at once (workers.h), while on
 * a local disk one thread does it faster than handing them out. */
#ifndef LISTING_H
#define LISTING_H

#include <dirent.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/stat.h>

struct listing_entry {
	char *name;
	long pos; /* telldir before it: where a READDIR that could not send
	           * it goes back to */
	struct stat st;
	int ok; /* lstat worked: the entry is sent (OpenSSH skips others) */
};

struct listing {
	struct listing_entry *e;
	size_t n, cap;
};

/* Read the next names of dirp into l (emptied first): at most
 * max_entries, stopping once their reply would pass about max_bytes (an
 * estimate from the names: owners and groups are not known yet, so the
 * reply's true bound is kept by listing_fits).
 * 0, or -1 when out of memory.  l->n == 0: the end of the directory. */
int listing_read(DIR *dirp, struct listing *l, size_t max_entries,
                 size_t max_bytes);
/* lstat every entry in dirp, the directory handle named dir. */
void listing_stat(DIR *dirp, const char *dir, struct listing *l);
void listing_free(struct listing *l);

/* The decisions, pure (tests/check_order.c).  Which entry to look up
 * first, timed: the first that is neither "." nor ".." (those are the
 * directory just opened and its parent: cached, so their lookup says
 * nothing of the others'); 0 when there is none. */
size_t listing_probe(const struct listing *l);
/* How many worker threads to ask for help with left entries still to
 * look up, when that first lookup took probe_ns, storage_slow says
 * whether metadata calls were slow before it (latency.h) and idle threads
 * are free.  None unless lookups are slow (a round trip, not a cached
 * inode), by this probe or by the calls before it: one cached name in a
 * directory whose other names need round trips must not make a batch
 * run one lookup at a time. */
#define LISTING_SLOW_NS 50000
/* May the reply keep an entry that took it to reply_len bytes, count
 * entries being in it before?  The first entry always (a NAME reply holds
 * one at least), the others while the reply stays within max: long owner
 * and group names (LDAP, AD) make an entry's size unknown until it is
 * encoded. */
int listing_fits(size_t reply_len, size_t max, uint32_t count);
unsigned listing_helpers(size_t left, int64_t probe_ns, int storage_slow,
                         unsigned idle);

#endif
