/* SPDX-License-Identifier: ISC
 * Copyright (c) 2026 The uring-sftp-server developers.  See LICENSE. */
/* Request structures, recycled: the data path allocates nothing per
 * request once the server is warm. */
#include "config.h"

#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <dirent.h>

#include "handle.h"
#include "input.h"
#include "readmem.h"
#include "request.h"
#include "upload.h"

/* Spare structs kept for reuse, and the largest reply buffer a spare may
 * keep (bigger ones, from long READDIR replies, are freed). */
#define SPARE_MAX 256
/* A request's log lines kept at most (DEBUG3 says a few lines each); a
 * line past this is written at once. */
#define LOG_LINES_MAX (64 * 1024)
#define SPARE_REPLY_CAP (64 * 1024)

static struct request *spare;
static unsigned num_spare;

static struct request *request_alloc(size_t max_reply)
{
	struct request *req = spare;
	struct wbuf reply, log_lines;

	if (req == NULL) {
		if ((req = malloc(sizeof(*req))) == NULL)
			return NULL;
		wbuf_init(&req->reply, max_reply);
		wbuf_init(&req->log_lines, LOG_LINES_MAX);
	} else {
		spare = req->next;
		num_spare--;
	}
	reply = req->reply;
	log_lines = req->log_lines;
	/* Everything but the packet bytes, which are written next. */
	memset(req, 0, offsetof(struct request, inline_packet));
	req->opened_fd = -1;
	req->reserved_handle = -1;
	req->reply = reply;
	req->log_lines = log_lines;
	req->log_lines.len = 0;
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

void request_give_read_mem(struct request *req)
{
	if (req->read_mem != NULL)
		readmem_give(req->read_mem_slot);
	req->read_mem = NULL;
	req->read_reply_len = 0;
}

void request_free(struct request *req)
{
	if (req->job_free != NULL)
		req->job_free(req);
	req->job_free = NULL;
	req->job = NULL;
	request_give_read_mem(req);
	if (req->opened_fd >= 0 && req->opened_name != NULL)
		close(req->opened_fd);
	if (req->opened_dir != NULL)
		closedir(req->opened_dir);
	free(req->opened_name);
	free(req->meta_path[0]);
	free(req->meta_path[1]);
	req->meta_path[0] = req->meta_path[1] = NULL;
	upload_discard(req->opened_upload);
	req->opened_upload = NULL;
	handle_unreserve(req->reserved_handle);
	req->reserved_handle = -1;
	req->opened_dir = NULL;
	req->opened_name = NULL;
	req->opened_fd = -1;
	if (req->chunk != NULL)
		input_chunk_put(req->chunk);
	if (req->packet_allocated)
		free(req->packet);
	req->chunk = NULL;
	req->packet_allocated = 0;
	if (num_spare >= SPARE_MAX) {
		wbuf_free(&req->reply);
		wbuf_free(&req->log_lines);
		free(req);
		return;
	}
	if (req->reply.cap > SPARE_REPLY_CAP)
		wbuf_free(&req->reply);
	if (req->log_lines.cap > SPARE_REPLY_CAP)
		wbuf_free(&req->log_lines);
	req->next = spare;
	spare = req;
	num_spare++;
}
