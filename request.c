/* SPDX-License-Identifier: ISC
 * Copyright (c) 2026 The uring-sftp-server developers.  See LICENSE. */
/* Request structures, recycled: the data path allocates nothing per
 * request once the server is warm. */
#include "config.h"

#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "input.h"
#include "pipes.h"
#include "request.h"

/* Spare structs kept for reuse, and the largest reply buffer a spare may
 * keep (bigger ones, from copied READs, are freed). */
#define SPARE_MAX 256
#define SPARE_REPLY_CAP (64 * 1024)

static struct request *spare;
static unsigned num_spare;

static struct request *request_alloc(size_t max_reply)
{
	struct request *req = spare;
	struct wbuf reply;

	if (req == NULL) {
		if ((req = malloc(sizeof(*req))) == NULL)
			return NULL;
		wbuf_init(&req->reply, max_reply);
	} else {
		spare = req->next;
		num_spare--;
	}
	reply = req->reply;
	/* Everything but the packet bytes, which are written next. */
	memset(req, 0, offsetof(struct request, inline_packet));
	req->reply = reply;
	req->reply.len = 0;
	req->reply.max = max_reply;
	return req;
}

struct request *request_new(const uint8_t *packet, size_t len, size_t max_reply,
                            struct input_chunk *chunk)
{
	struct request *req;

	if (len == 0 || (req = request_alloc(max_reply)) == NULL)
		return NULL;
	if (chunk != NULL) {
		req->packet = (uint8_t *)packet;
		req->chunk = chunk;
	} else if (len <= sizeof(req->inline_packet)) {
		req->packet = req->inline_packet;
		memcpy(req->packet, packet, len);
	} else {
		if ((req->packet = malloc(len)) == NULL) {
			request_free(req);
			return NULL;
		}
		req->packet_allocated = 1;
		memcpy(req->packet, packet, len);
	}
	req->packet_len = len;
	req->type = req->packet[0];
	rbuf_init(&req->body, req->packet + 1, len - 1);
	return req;
}

void request_free(struct request *req)
{
	if (req->job_free != NULL)
		req->job_free(req);
	req->job_free = NULL;
	req->job = NULL;
	if (req->has_pipe)
		pipe_put(&req->pipe, req->pipe_left);
	if (req->has_copy_slot)
		pipe_copy_done(req->io_want);
	if (req->chunk != NULL)
		input_chunk_put(req->chunk);
	if (req->packet_allocated)
		free(req->packet);
	req->has_pipe = 0;
	req->has_copy_slot = 0;
	req->direct = 0;
	req->chunk = NULL;
	req->packet_allocated = 0;
	if (num_spare >= SPARE_MAX) {
		wbuf_free(&req->reply);
		free(req);
		return;
	}
	if (req->reply.cap > SPARE_REPLY_CAP)
		wbuf_free(&req->reply);
	req->next = spare;
	spare = req;
	num_spare++;
}
