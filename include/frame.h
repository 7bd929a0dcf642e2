/* SPDX-License-Identifier: ISC
 * Copyright (c) 2026 The uring-sftp-server developers.  See LICENSE. */
/* Framing: a packet is a uint32 length (type byte and body), then those
 * bytes; frame_next makes the next complete one at the front of the input
 * buffer (input.h) into a request. */
#ifndef FRAME_H
#define FRAME_H

#include <stddef.h>

struct request;
enum frame_result {
	FRAME_NONE,     /* no complete packet yet */
	FRAME_REQUEST,  /* *req holds the next one */
	FRAME_TOO_LONG, /* length over SFTP_MAX_MSG_LENGTH: OpenSSH exits 11 */
	FRAME_EMPTY,    /* length 0: a parse error, exit 255 */
	FRAME_NOMEM
};
/* Cut the next complete packet off the front into a request. */
int frame_next(struct request **req, size_t max_reply);
/* A whole packet waits at the front (its length not checked). */
int frame_complete(void);
/* Bytes still missing from the packet at the front (0: complete, or its
 * length is bad). */
size_t frame_missing(void);

#endif
