/* SPDX-License-Identifier: ISC
 * Copyright (c) 2026 The uring-sftp-server developers.  See LICENSE. */
/* Read leases on files whose pages are spliced to stdout.  A spliced READ
 * reply is made of the file's page-cache pages until stdout's reader has
 * read it: whoever truncates or rewrites the file meanwhile changes the
 * reply (zeros past a truncation, bytes the file held only later).  A
 * read lease (F_SETLEASE F_RDLCK) makes every other open for writing and
 * every truncate wait until we let go, and tells us (SIGIO) when one
 * waits.  So a file is spliced only while we hold a lease on it; when a
 * lease is broken, that handle copies from then on, and the lease is let
 * go as soon as none of its file's pages are in transit.  Where no lease
 * can be had (a file someone has open for writing, one we neither own
 * nor have CAP_LEASE for, a file system without leases) READs copy.
 *
 * The lease belongs to the open file, so a handle closed while its
 * file's pages are in transit keeps its descriptor here until they have
 * been read.  Our own requests that would break our own lease (OPEN for
 * writing, SETSTAT's truncate) wait for the pages in transit anyway; the
 * queue lets every lease go before they run. */
#ifndef LEASE_H
#define LEASE_H

#include <stdint.h>
#include <sys/types.h>

/* May READs on this descriptor (a regular file opened read-only) splice?
 * Takes a lease the first time; 0: copy. */
int lease_for_splice(int fd);
/* Is the lease lease_for_splice took on fd still held (not broken)?  Then
 * *size is the file's size, which nobody can change while it is. */
int lease_held_size(int fd, uint64_t *size);
/* Close fd (a handle's), or keep it while it holds a lease: 0, or -1
 * with errno as close(2). */
int lease_close(int fd);
/* A lease-break signal arrived (async-signal-safe). */
void lease_note_break(void);
/* Leases wait to be let go (broken, or of closed handles): call
 * lease_poll() again soon. */
int lease_pending(void);
/* Mark broken leases, and let go of those whose file busy() says has no
 * pages in transit any more. */
void lease_poll(int (*busy)(dev_t dev, ino_t ino));
/* Let go of every lease (nothing is in transit, or the session is over);
 * READs take them again, except on handles whose lease was broken. */
void lease_release_all(void);

#endif
