/* SPDX-License-Identifier: ISC
 * Copyright (c) 2026 The uring-sftp-server developers.  See LICENSE. */
/* Requests in flight.  One list in arrival order holds every admitted
 * request until its reply is written, which gives replies in arrival order
 * for free.  Requests start strictly in arrival order too: an I/O request
 * that overlaps a write in flight on the same file, or a barrier while I/O
 * is in flight, holds up everything behind it.  That is what makes the
 * ordering rules hold and keeps any request from waiting forever. */
#include "config.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "coalesce.h"
#include "handle.h"
#include "handlers.h"
#include "lease.h"
#include "log.h"
#include "output.h"
#include "queue.h"

static struct queue_limits limits;
static struct request *head, *tail;
static struct request *next_start; /* first request not yet started */
static unsigned num_requests;      /* admitted, reply not fully written */
static unsigned num_in_flight;     /* REQ_IN_FLIGHT */
static size_t reply_bytes;         /* encoded, not yet written */
static size_t head_sent;           /* bytes of head's reply written */
static unsigned num_piped;         /* READ replies still in their pipes */
static int waiting_for_reader;     /* blocked until stdout is read */
/* Stepped requests (check-file) whose next step waits to be submitted. */
static struct request *steps_head, *steps_tail;
static int fatal_status;
static char fatal_message[sizeof(((struct request *)0)->fatal)];

void queue_init(const struct queue_limits *lim)
{
	limits = *lim;
}

/* Free a request the queue is done with. */
static void queue_release(struct request *req)
{
	if (req->pipe_left > 0)
		num_piped--;
	request_free(req);
	num_requests--;
}

void queue_reset(void)
{
	struct request *r, *next;

	for (r = head; r != NULL; r = next) {
		next = r->next;
		queue_release(r);
	}
	head = tail = next_start = NULL;
	steps_head = steps_tail = NULL;
	num_in_flight = 0;
	num_piped = 0;
	reply_bytes = 0;
	head_sent = 0;
	fatal_status = 0;
	fatal_message[0] = '\0';
	waiting_for_reader = 0;
}

int queue_has_room(void)
{
	return fatal_status == 0 && num_requests < limits.max_requests &&
	       reply_bytes < limits.max_reply_bytes;
}

unsigned queue_count(void)
{
	return num_requests;
}

int queue_idle(void)
{
	return head == NULL;
}

int queue_fatal_status(void)
{
	return fatal_status;
}

int queue_waiting_for_reader(void)
{
	return waiting_for_reader;
}

const char *queue_fatal_message(void)
{
	return fatal_message;
}

size_t queue_output_bytes(void)
{
	return reply_bytes;
}

void queue_admit(struct request *req)
{
	request_classify(req);
	req->state = REQ_WAITING;
	req->next = NULL;
	if (tail != NULL)
		tail->next = req;
	else
		head = req;
	tail = req;
	if (next_start == NULL)
		next_start = req;
	num_requests++;
}

static void request_done(struct request *req)
{
	req->state = REQ_DONE;
	reply_bytes += req->reply.len + req->pipe_left;
	if (req->pipe_left > 0)
		num_piped++;
}

/* Could running a and b in either order change a result?  Two writes only
 * when their bytes overlap.  A read and a write also when the write ends
 * past the read's start, since growing the file turns an EOF into data
 * (a hole) even for bytes the write does not touch. */
static int io_conflict(const struct request *a, const struct request *b)
{
	const struct request *rd, *wr;

	if (a->dev != b->dev || a->ino != b->ino)
		return 0;
	if (a->is_write && b->is_write)
		return a->start < b->end && b->start < a->end;
	if (!a->is_write && !b->is_write)
		return 0;
	rd = a->is_write ? b : a;
	wr = a->is_write ? a : b;
	return wr->end > rd->start;
}

/* Rule 2 of DESIGN.md: requests on one file that could see each other run
 * in arrival order.  Members of the run the request will join do not
 * count: they end where it begins.  A spliced READ counts until its data
 * has left its pipe: the pipe holds the file's pages, not a copy.
 * Stepped requests run one at a time: each holds a buffer, and their work
 * (hashing) is CPU in this thread, which a second one would only share. */
static int conflicts_with_in_flight(const struct request *req,
                                    const struct write_run *joining)
{
	const struct request *r;

	for (r = head; r != next_start; r = r->next) {
		if ((r->state == REQ_IN_FLIGHT || r->pipe_left > 0) &&
		    io_conflict(r, req) &&
		    (joining == NULL || r->run != joining))
			return 1;
		if (r->state == REQ_IN_FLIGHT && r->io_step != NULL &&
		    req->io_step != NULL)
			return 1;
	}
	return 0;
}

/* A parse error is fatal, as in OpenSSH; the requests before it are still
 * answered, the ones after it are dropped.  The handler that found it
 * wrote OpenSSH's line for it into req->fatal (parse.h). */
static void stop_at(struct request *req)
{
	struct request *r, *next;

	memcpy(fatal_message, req->fatal, sizeof(fatal_message));
	fatal_status = 255;
	for (r = req; r != NULL; r = next) {
		next = r->next;
		queue_release(r);
	}
	if (req == head) {
		head = tail = NULL;
	} else {
		for (r = head; r->next != req; r = r->next)
			;
		r->next = NULL;
		tail = r;
	}
	next_start = NULL;
}

static void request_io_done(struct io_op *op);
static void step_done(struct request *req);

/* Spliced READ data handed to stdout is made of file pages until the
 * reader (sshd, or the client) has read it: nothing may change that file
 * meanwhile (a WRITE: the pages it writes; another request: any file).
 * The event loop looks again shortly (queue_waiting_for_reader). */
static int reader_behind(const struct request *req)
{
	int behind = req->is_write
	                 ? output_range_in_transit(req->dev, req->ino,
	                                           req->start, req->end)
	                 : output_in_transit();

	if (behind)
		waiting_for_reader = 1;
	return behind;
}

/* Start next_start if the rules allow it: 1 started, 0 must wait.  While
 * it waits, merged writes are flushed: what it waits for may be in one. */
static int start_one(struct request *req)
{
	struct write_run *joining;
	int rc;

	/* A barrier waits for everything before it; one that may change
	 * file data also for spliced READ data still in pipes. */
	if (!request_is_io(req) &&
	    (num_in_flight > 0 || (request_may_modify(req) &&
	                           (num_piped > 0 || reader_behind(req))))) {
		coalesce_flush();
		return 0;
	}
	if (req->state == REQ_WAITING) {
		/* It may open for writing or truncate a file we hold a read
		 * lease on: that would wait for us.  Nothing is in transit
		 * now, so the leases can go. */
		if (!request_is_io(req) && request_may_modify(req))
			lease_release_all();
		rc = request_start(req);
		if (rc == HANDLER_PARSE_ERROR) {
			stop_at(req);
			return 0;
		}
		if (rc == HANDLER_DONE) {
			request_done(req);
			return 1;
		}
		req->state = REQ_PARSED;
		req->io.done = request_io_done;
	}
	joining = coalesce_run_for(req);
	if (conflicts_with_in_flight(req, joining) ||
	    (req->is_write && reader_behind(req))) {
		coalesce_flush();
		return 0;
	}
	if (req->is_write && coalesce_add(req, joining, queue_io_finished)) {
		req->state = REQ_IN_FLIGHT;
		num_in_flight++;
		return 1;
	}
	if (req->io_prepare != NULL) {
		switch (req->io_prepare(req)) {
		case IO_PREPARE_WAIT:
			return 0;
		case IO_PREPARE_DONE:
			req->state = REQ_IN_FLIGHT;
			num_in_flight++;
			queue_io_finished(req);
			return 1;
		}
	}
	rc = backend->submit(&req->io);
	if (rc == -EBUSY) {
		coalesce_flush();
		return 0;
	}
	req->state = REQ_IN_FLIGHT;
	num_in_flight++;
	if (rc < 0) {
		req->io.result = rc;
		if (req->io_step != NULL)
			step_done(req);
		else
			queue_io_finished(req);
	}
	return 1;
}

/* Submit the next step of each stepped request, in order, while the back
 * end has room. */
static void submit_steps(void)
{
	struct request *req;
	int rc;

	while ((req = steps_head) != NULL) {
		rc = backend->submit(&req->io);
		if (rc == -EBUSY)
			return;
		steps_head = req->step_next;
		if (steps_head == NULL)
			steps_tail = NULL;
		if (rc < 0) {
			req->io.result = rc;
			step_done(req);
		}
	}
}

int queue_steps_pending(void)
{
	return steps_head != NULL;
}

void queue_dispatch(int more_input)
{
	waiting_for_reader = 0;
	submit_steps();
	while (next_start != NULL && start_one(next_start))
		next_start = next_start->next;
	/* Never hold replies while the client waits for them. */
	if (next_start != NULL || !more_input)
		coalesce_flush();
	backend->flush();
}

/* Regular files never return a short read before EOF (draft §6.4), and a
 * short write is finished rather than failed. */
static int resume_short_io(struct request *req, ssize_t n)
{
	struct handle *h;
	int rc;

	if (n <= 0 || (size_t)n >= req->io.len)
		return 0;
	if (req->io.opcode == IO_READ) {
		h = handle_get(req->handle, HANDLE_FILE);
		if (h == NULL || !h->is_regular)
			return 0;
	}
	if (req->io.offset != IO_NO_OFFSET)
		req->io.offset += (uint64_t)n;
	if (req->io.buf != NULL) /* a splice has no buffer */
		req->io.buf = (uint8_t *)req->io.buf + n;
	req->io.len -= (size_t)n;
	/* The slot this completion freed is ours, so this cannot be full;
	 * if it fails anyway, the request fails rather than look done. */
	if ((rc = backend->submit(&req->io)) != 0) {
		req->io.result = rc;
		return 0;
	}
	return 1;
}

void queue_io_finished(struct request *req)
{
	num_in_flight--;
	/* A stepped request's last step encoded its reply. */
	if (req->io_step == NULL)
		req->io_finish(req);
	request_done(req);
}

/* A step finished: another one is queued for the next turn, never
 * submitted from here (the plain back end would run it at once, and the
 * whole job inside one reap). */
static void step_done(struct request *req)
{
	if (!req->io_step(req)) {
		queue_io_finished(req);
		return;
	}
	req->step_next = NULL;
	if (steps_tail != NULL)
		steps_tail->step_next = req;
	else
		steps_head = req;
	steps_tail = req;
}

static void request_io_done(struct io_op *op)
{
	struct request *req = op->owner;
	ssize_t n = op->result;

	if (req->io_step != NULL) {
		step_done(req);
		return;
	}

	if (n > 0)
		req->io_done += (size_t)n;
	if (resume_short_io(req, n))
		return;
	if (n < 0 && req->io_done == 0 && req->io_fallback != NULL &&
	    (n == -EINVAL || n == -ENOSYS || n == -EOPNOTSUPP) &&
	    req->io_fallback(req) && backend->submit(&req->io) == 0)
		return;
	queue_io_finished(req);
}

int queue_file_spliced(dev_t dev, ino_t ino)
{
	const struct request *r;

	for (r = head; r != NULL && r != next_start; r = r->next)
		if ((r->has_pipe || r->direct) && r->dev == dev &&
		    r->ino == ino &&
		    (r->state == REQ_IN_FLIGHT || r->pipe_left > 0))
			return 1;
	return 0;
}

/* Replies ready to go, in order, as iovecs.  A reply whose data waits in
 * a pipe ends the list after its header: the pipe goes next. */
int queue_output_iov(struct iovec *iov, int max)
{
	struct request *r;
	size_t skip = head_sent;
	int n = 0;

	for (r = head; r != NULL && r->state == REQ_DONE && n < max;
	     r = r->next) {
		if (r->reply.len > skip) {
			iov[n].iov_base = r->reply.data + skip;
			iov[n].iov_len = r->reply.len - skip;
			n++;
		}
		skip = 0;
		if (r->pipe_left > 0)
			break;
	}
	return n;
}

static void release_head(void)
{
	struct request *r = head;

	head_sent = 0;
	head = r->next;
	if (head == NULL)
		tail = NULL;
	queue_release(r);
}

void queue_output_consumed(size_t n)
{
	struct request *r;
	size_t left;

	reply_bytes -= n;
	while ((r = head) != NULL && r->state == REQ_DONE) {
		left = r->reply.len - head_sent;
		if (n < left || (n == left && r->pipe_left > 0)) {
			head_sent += n;
			return;
		}
		n -= left;
		release_head();
	}
}

int queue_output_pipe(size_t *len, int64_t *off)
{
	if (head == NULL || head->state != REQ_DONE || head->pipe_left == 0 ||
	    head_sent < head->reply.len)
		return -1;
	*len = head->pipe_left;
	if (!head->direct) {
		*off = -1;
		return head->pipe.rd;
	}
	*off = (int64_t)(head->io.offset + (head->io_done - head->pipe_left));
	return head->io.fd;
}

int queue_output_copy_rest(void)
{
	struct request *r = head;
	uint64_t off;
	uint8_t *p;
	size_t got = 0, left;
	ssize_t n;

	if (r == NULL || !r->direct || r->pipe_left == 0)
		return -EINVAL;
	left = r->pipe_left;
	off = r->io.offset + (r->io_done - left);
	if (wbuf_reserve(&r->reply, left, &p) != BUF_OK)
		return -ENOMEM;
	while (got < left) {
		n = pread(r->io.fd, p + got, left - got, (off_t)(off + got));
		if (n == -1 && errno == EINTR)
			continue;
		if (n <= 0)
			return n == 0 ? -ENODATA : -errno;
		got += (size_t)n;
	}
	/* The bytes are ours now: a plain reply from here on. */
	r->reply.len += left;
	r->pipe_left = 0;
	r->direct = 0;
	num_piped--;
	return 0;
}

void queue_output_piped(size_t n)
{
	reply_bytes -= n;
	output_spliced(head->dev, head->ino, head->start, head->io_done);
	head->pipe_left -= n;
	if (head->pipe_left == 0) {
		num_piped--;
		release_head();
	}
}
