/* SPDX-License-Identifier: ISC
 * Copyright (c) 2026 The uring-sftp-server developers.  See LICENSE. */
/* Framing: SFTP packets cut off the front of the input buffer into
 * requests.  A packet is a uint32 length (type byte and body), then those
 * bytes.  Kept apart from input.c, which holds bytes and knows nothing of
 * SFTP, and from request.c, which makes a request of one packet. */
#include "config.h"

#include <stdint.h>

#include "buf.h"
#include "frame.h"
#include "input.h"
#include "request.h"
#include "sftp.h"

/* A WRITE packet at least this big is used where it was read. */
#define ZERO_COPY_MIN (4 * 1024)

int frame_complete(void)
{
	size_t avail;
	const uint8_t *p = input_data(&avail);

	return avail >= 4 && avail - 4 >= peek_u32(p);
}

size_t frame_missing(void)
{
	size_t avail;
	const uint8_t *p = input_data(&avail);
	uint32_t len;

	if (avail < 4)
		return 4 - avail;
	len = peek_u32(p);
	if (len > SFTP_MAX_MSG_LENGTH || avail - 4 >= len)
		return 0;
	return 4 + (size_t)len - avail;
}

int frame_next(struct request **req, size_t max_reply)
{
	struct input_chunk *chunk;
	const uint8_t *p;
	size_t avail;
	uint32_t len;
	int in_place;

	p = input_data(&avail);
	if (avail < 4)
		return FRAME_NONE;
	len = peek_u32(p);
	if (len > SFTP_MAX_MSG_LENGTH)
		return FRAME_TOO_LONG;
	if (len == 0)
		return FRAME_EMPTY;
	if (avail - 4 < len)
		return FRAME_NONE;
	in_place = p[4] == SSH2_FXP_WRITE && len >= ZERO_COPY_MIN;
	input_take(4 + len, in_place ? &chunk : NULL);
	*req = request_new(p + 4, len, max_reply, in_place ? chunk : NULL);
	if (*req == NULL && in_place)
		input_chunk_put(chunk);
	return *req != NULL ? FRAME_REQUEST : FRAME_NOMEM;
}
