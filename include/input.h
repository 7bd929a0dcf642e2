/* SPDX-License-Identifier: ISC
 * Copyright (c) 2026 The uring-sftp-server developers.  See LICENSE. */
/* The input buffer: stdin is read in large chunks, and a large WRITE's
 * packet stays where it was read until the write is done (the request
 * holds a reference on its chunk), so its data is never copied. */
#ifndef INPUT_H
#define INPUT_H

#include <stddef.h>
#include <stdint.h>

struct input_chunk;

/* Chunks of chunk_size bytes, at most max_chunks alive at once. */
int input_init(size_t chunk_size, unsigned max_chunks);
/* Where the next read() may put bytes, and how many; NULL when every
 * chunk is held by requests (read again once some are done). need: bytes
 * still missing from the packet at the front, so it can be completed. */
uint8_t *input_space(size_t *room, size_t need);
void input_added(size_t n);
/* The bytes read and not yet taken. */
const uint8_t *input_data(size_t *len);
/* Take n bytes from the front.  With ref, also a reference on the chunk
 * that holds them (release it with input_chunk_put). */
void input_take(size_t n, struct input_chunk **ref);
void input_chunk_put(struct input_chunk *c);

#endif
