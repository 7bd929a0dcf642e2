/* SPDX-License-Identifier: ISC
 * Copyright (c) 2026 The uring-sftp-server developers.  See LICENSE. */
/* Requests in flight: admission bounds, the ordering rules of DESIGN.md and
 * replies in arrival order. */
#ifndef QUEUE_H
#define QUEUE_H

#include <stddef.h>
#include <stdint.h>
#include <sys/uio.h>

#include "request.h"

struct queue_limits {
	unsigned max_requests;  /* admitted and not yet replied */
	size_t max_reply_bytes; /* encoded replies waiting for stdout */
};

void queue_init(const struct queue_limits *lim);
/* Drop every request and forget a fatal error: for harnesses that run
 * many sessions in one process (the fuzzer).  Nothing may be in flight. */
void queue_reset(void);
/* Room for one more request (and its worst-case reply)? */
int queue_has_room(void);
/* Take ownership of a framed request, in arrival order. */
void queue_admit(struct request *req);
/* Start every request the ordering rules allow; submit I/O.  more_input:
 * further requests are about to be framed, so merged writes may wait for
 * them; otherwise every run is written now. */
void queue_dispatch(int more_input);
/* A stepped request's next step waits to be submitted: the event loop
 * must come round again without sleeping, but should look at its input
 * and output on the way. */
int queue_steps_pending(void);
/* An I/O request's bytes are done (io.result, io_done set): reply. */
void queue_io_finished(struct request *req);
/* Nothing admitted, in flight or waiting to be sent. */
int queue_idle(void);
/* Requests admitted and not yet replied. */
unsigned queue_count(void);
/* A fatal parse error stopped dispatch: the exit status to use once the
 * replies before it are out (0 if none). */
int queue_fatal_status(void);
const char *queue_fatal_message(void);
/* Replies ready to send, in arrival order: fill up to max iovecs. */
int queue_output_iov(struct iovec *iov, int max);
/* n bytes of those were written. */
void queue_output_consumed(size_t n);
size_t queue_output_bytes(void);

#endif
