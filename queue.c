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
#include "direct.h"
#include "handle.h"
#include "io.h"
#include "handlers.h"
#include "latency.h"
#include "log.h"
#include "monotonic.h"
#include "order.h"
#include "output.h"
#include "queue.h"
#include "route.h"

static struct queue_limits limits;
static struct request *head, *tail;
static struct request *next_start; /* first request not yet started */
static struct request *next_log;   /* first whose lines are not written */
static unsigned num_requests;      /* admitted, reply not fully written */
static unsigned num_in_flight;     /* REQ_IN_FLIGHT */
static size_t reply_bytes;         /* encoded, not yet written */
static size_t head_sent;           /* bytes of head's reply written */
/* Stepped requests (check-file) whose next step waits to be submitted. */
static struct request *steps_head, *steps_tail;
/* Requests arrived, or READs left to be asked again, since the last walk
 * of the waiting READs for read-ahead hints: only then is a walk worth
 * it (a session woken by a recheck while its client reads nothing walks
 * no more).  A steady download still walks at nearly every wake-up, as
 * the client sends a READ per reply it reads: 3% of the server's samples
 * in a get through sshd (doc/design.md, "Read-ahead hints"). */
static int hints_unasked;
static int fatal_status;
static char fatal_message[sizeof(((struct request *)0)->fatal)];

void queue_init(const struct queue_limits *lim)
{
	limits = *lim;
}

/* Free a request the queue is done with. */
static void queue_release(struct request *req)
{
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
	head = tail = next_start = next_log = NULL;
	steps_head = steps_tail = NULL;
	num_in_flight = 0;
	reply_bytes = 0;
	head_sent = 0;
	hints_unasked = 0;
	fatal_status = 0;
	fatal_message[0] = '\0';
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
	if (next_log == NULL)
		next_log = req;
	num_requests++;
	hints_unasked = 1;
}

/* Write the log lines of the requests done, in arrival order, up to the
 * first one still running. */
static void write_logs(void)
{
	while (next_log != NULL && next_log->state == REQ_DONE) {
		log_replay(&next_log->log_lines);
		next_log = next_log->next;
	}
}

static void request_done(struct request *req)
{
	size_t len;

	req->state = REQ_DONE;
	(void)request_reply(req, &len);
	reply_bytes += len;
	write_logs();
}

/* Run a request's own code with its log lines kept (log.h). */
static int start_logged(struct request *req)
{
	int rc;

	log_capture(&req->log_lines);
	rc = request_start(req);
	log_capture(NULL);
	return rc;
}

static void finish_logged(struct request *req)
{
	log_capture(&req->log_lines);
	req->io_finish(req);
	log_capture(NULL);
}

/* The ordering rule (order.h) against every request running now.
 * Members of the run the request will join do not count: they end where
 * it begins.  A READ's bytes are its own copy once read, so it counts
 * only while in flight.  Stepped requests run one at a time: each holds a
 * buffer, and their work (hashing) is CPU in this thread, which a second
 * one would only share. */
static int conflicts_with_in_flight(const struct request *req,
                                    const struct write_run *joining)
{
	const struct request *r;

	for (r = head; r != next_start; r = r->next) {
		if (r->state != REQ_IN_FLIGHT ||
		    (joining != NULL && r->run == joining))
			continue;
		if ((r->io_step != NULL && req->io_step != NULL) ||
		    order_conflict(&r->scope, &req->scope))
			return 1;
	}
	return 0;
}

/* A READ, WRITE or check-file step: its byte range of its file. */
static void io_scope(struct request *req)
{
	struct order_scope *s = &req->scope;

	memset(s, 0, sizeof(*s));
	s->cls = ORDER_IO;
	s->handle = -1;
	s->has_file = 1;
	s->dev = req->dev;
	s->ino = req->ino;
	s->start = req->start;
	s->end = req->end;
	s->writes = req->is_write;
	s->in_order = !req->regular_file;
}

/* A parse error is fatal, as in OpenSSH; the requests before it are still
 * answered, the ones after it are dropped.  The handler that found it
 * wrote OpenSSH's line for it into req->fatal (parse.h). */
static void stop_at(struct request *req)
{
	struct request *r, *next;

	memcpy(fatal_message, req->fatal, sizeof(fatal_message));
	fatal_status = 255;
	/* What it logged before the parse error is written now (nothing
	 * after it ran, so nothing after it logged). */
	log_replay(&req->log_lines);
	if (next_log == req)
		next_log = NULL;
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

/* A handler in a worker thread (workers.h): the request's whole handler,
 * whose fields were seen to be well formed, so it cannot end the session;
 * the loop does what only it may (open_finish: the handle table). */
static void offload_call(struct io_op *op)
{
	int64_t t0 = monotonic_ns();

	op->result = start_logged(op->owner);
	latency_note(monotonic_ns() - t0);
}

static void offload_done(struct io_op *op)
{
	struct request *req = op->owner;

	if (op->result == HANDLER_FINISH)
		finish_logged(req);
	else if (op->result != HANDLER_DONE && op->result != HANDLER_REFUSED)
		fatal_exit(255, "request %u: handler result %d in a worker",
		           req->id, (int)op->result);
	num_in_flight--;
	request_done(req);
}

static int offload(struct request *req)
{
	memset(&req->io, 0, sizeof(req->io));
	req->io.opcode = IO_CALL;
	req->io.call = offload_call;
	req->io.owner = req;
	req->io.done = offload_done;
	if (io_submit(&req->io) != 0)
		return -1;
	req->state = REQ_IN_FLIGHT;
	num_in_flight++;
	return 0;
}

/* A direct read (direct.h) completed, or could not be submitted: whatever
 * the request still reads goes through the page cache.  One that failed is
 * read again so, once: the error a client sees is then the one OpenSSH's
 * server would have had.  One cut short stopped at the end of the file,
 * and what follows (nothing, or what a writer just appended) is not
 * aligned.  1 when read again. */
static int direct_read_ended(struct request *req, ssize_t n)
{
	struct handle *h;

	if (req->read_direct_align == 0)
		return 0;
	req->read_direct_align = 0;
	if ((h = handle_get(req->handle, HANDLE_FILE)) == NULL)
		return 0;
	direct_read_done(&h->direct, (long)n);
	req->io.fd = h->fd;
	return n < 0 && io_submit(&req->io) == 0;
}

/* Start next_start if the rules allow it: 1 started, 0 must wait.  While
 * it waits, merged writes are flushed: what it waits for may be in one. */
static int start_one(struct request *req)
{
	struct write_run *joining;
	int64_t t0;
	int rc, slow;

	if (req->state == REQ_WAITING) {
		/* What it acts on is known before it runs, but for READ and
		 * WRITE (their handler finds the file and the range). */
		if (request_is_io(req))
			request_io_prescope(req);
		else
			request_scope(req);
		if (conflicts_with_in_flight(req, NULL)) {
			coalesce_flush();
			return 0;
		}
		/* An OPEN's handle is numbered now, in arrival order. */
		if (req->scope.opens_handle)
			req->reserved_handle = handle_reserve();
		/* Where it runs (route.h): on slow storage its one call in
		 * the ring, or the whole handler in a worker. */
		slow = !request_is_io(req) && latency_storage_slow();
		if (slow)
			switch (
			    route_request(request_offloadable(req), slow,
			                  io_ring_has(request_ring_op(req)))) {
			case ROUTE_RING:
				req->via_ring = 1;
				break;
			case ROUTE_WORKER:
				if (offload(req) == 0)
					return 1;
				break;
			case ROUTE_LOOP:
				break;
			}
		t0 = monotonic_ns();
		rc = start_logged(req);
		/* Metadata (what a worker might run) is timed: is the storage
		 * slow?  Not when its call went to the ring (io.c times that
		 * one). */
		if (!request_is_io(req) && request_timed(req) && !req->via_ring)
			latency_note(monotonic_ns() - t0);
		if (rc == HANDLER_PARSE_ERROR) {
			stop_at(req);
			return 0;
		}
		if (rc == HANDLER_FINISH)
			finish_logged(req);
		if (rc == HANDLER_FINISH || rc == HANDLER_DONE) {
			request_done(req);
			return 1;
		}
		if (request_is_io(req))
			io_scope(req);
		req->state = REQ_PARSED;
		req->io.done = request_io_done;
	}
	joining = coalesce_run_for(req);
	if (conflicts_with_in_flight(req, joining)) {
		coalesce_flush();
		return 0;
	}
	if (req->is_write && coalesce_add(req, joining, queue_io_finished)) {
		req->state = REQ_IN_FLIGHT;
		num_in_flight++;
		return 1;
	}
	if (req->io_prepare != NULL &&
	    req->io_prepare(req) == IO_PREPARE_WAIT) {
		if (hints_unasked)
			hints_unasked = read_hint_waiting(req);
		return 0;
	}
	rc = io_submit(&req->io);
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
		else if (!direct_read_ended(req, rc))
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
		rc = io_submit(&req->io);
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
	if (req->io.buf != NULL)
		req->io.buf = (uint8_t *)req->io.buf + n;
	req->io.len -= (size_t)n;
	/* The slot this completion freed is ours, so this cannot be full;
	 * if it fails anyway, the request fails rather than look done. */
	if ((rc = io_submit(&req->io)) != 0) {
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
		finish_logged(req);
	request_done(req);
}

/* A step finished: another one is queued for the next turn, never
 * submitted from here (the plain back end would run it at once, and the
 * whole job inside one reap). */
static void step_done(struct request *req)
{
	int more;

	log_capture(&req->log_lines);
	more = req->io_step(req);
	log_capture(NULL);
	if (!more) {
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
	if (direct_read_ended(req, n) || resume_short_io(req, n))
		return;
	queue_io_finished(req);
}

/* Replies ready to go, in order, as iovecs. */
int queue_output_iov(struct iovec *iov, int max)
{
	struct request *r;
	const uint8_t *p;
	size_t skip = head_sent, len;
	int n = 0;

	for (r = head; r != NULL && r->state == REQ_DONE && n < max;
	     r = r->next) {
		p = request_reply(r, &len);
		if (len > skip) {
			iov[n].iov_base = (void *)(p + skip);
			iov[n].iov_len = len - skip;
			n++;
		}
		skip = 0;
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
	size_t left, len;

	reply_bytes -= n;
	while ((r = head) != NULL && r->state == REQ_DONE) {
		(void)request_reply(r, &len);
		left = len - head_sent;
		if (n < left) {
			head_sent += n;
			return;
		}
		n -= left;
		release_head();
	}
}
