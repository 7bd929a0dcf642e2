/* SPDX-License-Identifier: ISC
 * Copyright (c) 2026 The uring-sftp-server developers.  See LICENSE. */
/* Write merging.  A run collects WRITEs on one handle whose offsets follow
 * on from each other (or that all append) and writes them with one
 * IO_WRITEV (pwritev, done inline by both back ends: writes never reach
 * the ring), straight from the requests' packets: no copy.
 * When the run is written, each member is answered by what happened to its
 * own bytes: OK if all were written, else the error the file system gave
 * for the remainder. */
#include "config.h"

#include <errno.h>
#include <stdlib.h>

#include "backend.h"
#include "io.h"
#include "coalesce.h"

/* Enough iovecs for 256 KiB of 4 KiB writes; a run that fills them is
 * written at once. */
#define RUN_MAX_IOV 64

struct write_run {
	struct io_op io;
	int handle;
	int append;
	uint64_t end;   /* the offset a joining WRITE must have */
	size_t total;   /* bytes in the run */
	size_t written; /* bytes the file system took */
	int iovcnt;
	struct iovec iov[RUN_MAX_IOV];
	struct request *first, *last;
	void (*member_done)(struct request *req); /* coalesce_add's done */
	struct write_run *next; /* pending list, or free list */
};

static size_t run_limit;
static struct write_run *pending; /* oldest first */
static struct write_run *free_runs;

void coalesce_init(size_t max_bytes)
{
	run_limit = max_bytes;
}

int coalesce_pending(void)
{
	return pending != NULL;
}

static int run_can_take(const struct write_run *run, const struct request *req)
{
	if (run->handle != req->handle || run->iovcnt == RUN_MAX_IOV ||
	    run->total + req->io.len > run_limit)
		return 0;
	return run->append || run->end == req->io.offset;
}

/* The newest pending run on the handle: the only one a WRITE may join. */
static struct write_run *pending_run_of(int handle)
{
	struct write_run *run, *found = NULL;

	for (run = pending; run != NULL; run = run->next)
		if (run->handle == handle)
			found = run;
	return found;
}

struct write_run *coalesce_run_for(const struct request *req)
{
	struct write_run *run;

	if (run_limit == 0 || !req->is_write)
		return NULL;
	run = pending_run_of(req->handle);
	return run != NULL && run_can_take(run, req) ? run : NULL;
}

static void unlink_pending(struct write_run *run)
{
	struct write_run **p;

	for (p = &pending; *p != NULL; p = &(*p)->next)
		if (*p == run) {
			*p = run->next;
			return;
		}
}

static void run_free(struct write_run *run)
{
	run->next = free_runs;
	free_runs = run;
}

/* Answer every member by what happened to its bytes. */
static void run_finish(struct write_run *run, ssize_t err)
{
	struct request *req, *next;
	size_t before = 0, covered;

	for (req = run->first; req != NULL; req = next) {
		next = req->run_next;
		covered = run->written > before ? run->written - before : 0;
		if (covered > req->io.len)
			covered = req->io.len;
		req->io_done = covered;
		req->io.rw_refused = run->io.rw_refused;
		req->io.result =
		    covered == req->io.len ? (ssize_t)covered : err;
		before += req->io.len;
		req->run = NULL;
		req->run_next = NULL;
		run->member_done(req);
	}
	run_free(run);
}

/* Skip n written bytes in the iovecs, for resubmitting the remainder. */
static void run_advance(struct write_run *run, size_t n)
{
	while (n > 0 && run->io.iovcnt > 0) {
		if (n < run->io.iov->iov_len) {
			run->io.iov->iov_base =
			    (uint8_t *)run->io.iov->iov_base + n;
			run->io.iov->iov_len -= n;
			return;
		}
		n -= run->io.iov->iov_len;
		run->io.iov++;
		run->io.iovcnt--;
	}
}

static void run_done(struct io_op *op)
{
	struct write_run *run = op->owner;
	ssize_t n = op->result;
	int rc;

	if (n > 0) {
		run->written += (size_t)n;
		if (run->written < run->total) {
			/* Short: write the rest, which also tells us why it
			 * stopped (ENOSPC, EDQUOT, ...). */
			run_advance(run, (size_t)n);
			if (run->io.offset != IO_NO_OFFSET)
				run->io.offset += (uint64_t)n;
			if ((rc = io_submit(&run->io)) == 0)
				return;
			n = rc;
		}
	}
	run_finish(run, n < 0 ? n : 0);
}

static int run_submit(struct write_run *run)
{
	int rc;

	/* Every member's descriptor is its handle's: setup_io copied it, and
	 * the handle stays open while they are in flight. */
	run->io.opcode = IO_WRITEV;
	run->io.fd = run->first->io.fd;
	run->io.offset = run->first->io.offset;
	run->io.iov = run->iov;
	run->io.iovcnt = run->iovcnt;
	run->io.rw_flags = run->first->io.rw_flags; /* the handle's */
	run->io.rw_refused = 0;
	run->io.done = run_done;
	run->io.owner = run;
	if ((rc = io_submit(&run->io)) == 0)
		unlink_pending(run);
	return rc;
}

void coalesce_flush(void)
{
	struct write_run *run, *next;

	for (run = pending; run != NULL; run = next) {
		next = run->next;
		if (run_submit(run) == -EBUSY)
			return; /* retried at the next dispatch */
	}
}

static struct write_run *run_new(struct request *req,
                                 void (*done)(struct request *req))
{
	struct write_run *run, **tail;

	if ((run = free_runs) != NULL)
		free_runs = run->next;
	else if ((run = malloc(sizeof(*run))) == NULL)
		return NULL;
	run->handle = req->handle;
	/* setup_io leaves an append handle's WRITE without an offset. */
	run->append = req->io.offset == IO_NO_OFFSET;
	run->end = req->io.offset;
	run->total = 0;
	run->written = 0;
	run->iovcnt = 0;
	run->first = run->last = NULL;
	run->member_done = done;
	run->next = NULL;
	for (tail = &pending; *tail != NULL; tail = &(*tail)->next)
		;
	*tail = run;
	return run;
}

int coalesce_add(struct request *req, struct write_run *joining,
                 void (*done)(struct request *req))
{
	struct write_run *run = joining, *old;

	/* Only regular files: a device may treat each write as a unit (a
	 * record of /dev/kmsg, a datagram), so two writes are not one. */
	if (run_limit == 0 || req->io.len > run_limit || !req->regular_file)
		return 0;
	if (run == NULL) {
		/* Not contiguous: the handle's run is complete. */
		while ((old = pending_run_of(req->handle)) != NULL)
			if (run_submit(old) != 0)
				return 0; /* back end full: go alone, later */
		if ((run = run_new(req, done)) == NULL)
			return 0;
	}
	run->iov[run->iovcnt].iov_base = req->io.buf;
	run->iov[run->iovcnt].iov_len = req->io.len;
	run->iovcnt++;
	run->total += req->io.len;
	run->end += req->io.len;
	req->run = run;
	req->run_next = NULL;
	if (run->last != NULL)
		run->last->run_next = req;
	else
		run->first = req;
	run->last = req;
	if (run->total >= run_limit || run->iovcnt == RUN_MAX_IOV)
		(void)run_submit(run); /* if the back end is full: next flush */
	return 1;
}
