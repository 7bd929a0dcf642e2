/* SPDX-License-Identifier: ISC
 * Copyright (c) 2026 The uring-sftp-server developers.  See LICENSE. */
/* The chunked input buffer.  Bytes are read into the current chunk; the
 * framer (frame.c) takes packets from its front.  When the current chunk has no
 * room left for what is still to come, the unframed tail moves to a fresh chunk
 * and the old one lives on while requests hold it.  Memory stays bounded:
 * at most max_chunks exist, and reading waits when all are held. */
#include "config.h"

#include <stdlib.h>
#include <string.h>

#include "input.h"

struct input_chunk {
	unsigned refs; /* requests holding it, plus one while current */
	size_t start;  /* first byte not yet taken */
	size_t end;    /* bytes read into it */
	struct input_chunk *next_free;
	uint8_t data[];
};

static size_t chunk_size;
static unsigned chunks_alive, chunks_max;
static struct input_chunk *cur, *spare;

static struct input_chunk *chunk_get(void)
{
	struct input_chunk *c = spare;

	if (c != NULL) {
		spare = c->next_free;
	} else {
		if (chunks_alive >= chunks_max ||
		    (c = malloc(sizeof(*c) + chunk_size)) == NULL)
			return NULL;
		chunks_alive++;
	}
	c->refs = 1;
	c->start = c->end = 0;
	return c;
}

void input_chunk_put(struct input_chunk *c)
{
	if (--c->refs > 0)
		return;
	/* Keep one spare so a steady stream does not malloc; free others. */
	if (spare == NULL) {
		c->next_free = NULL;
		spare = c;
	} else {
		free(c);
		chunks_alive--;
	}
}

int input_init(size_t size, unsigned max)
{
	chunk_size = size;
	chunks_max = max < 2 ? 2 : max;
	cur = chunk_get();
	return cur != NULL ? 0 : -1;
}

/* Reads smaller than this are not worth a system call when a fresh chunk
 * can give more room. */
#define INPUT_MIN_READ (64 * 1024)

uint8_t *input_space(size_t *room, size_t need)
{
	struct input_chunk *c;
	size_t tail = cur->end - cur->start;
	size_t free_room;

	if (tail == 0 && cur->refs == 1)
		cur->start = cur->end = 0; /* nobody holds it: start over */
	free_room = chunk_size - cur->end;
	if (free_room >= need && free_room >= INPUT_MIN_READ)
		goto current;
	/* A complete packet waits at the front (for room in the queue):
	 * frame it first rather than shuffle bytes to read more. */
	if (need == 0 && tail > 0)
		goto current;
	if (cur->refs == 1) {
		/* Only we use it: move the tail to the front. */
		memmove(cur->data, cur->data + cur->start, tail);
	} else if ((c = chunk_get()) != NULL) {
		memcpy(c->data, cur->data + cur->start, tail);
		input_chunk_put(cur);
		cur = c;
	} else if (free_room >= need && free_room > 0) {
		goto current; /* every chunk is held: make do */
	} else {
		return NULL;
	}
	cur->start = 0;
	cur->end = tail;
current:
	*room = chunk_size - cur->end;
	return *room > 0 ? cur->data + cur->end : NULL;
}

void input_added(size_t n)
{
	cur->end += n;
}

const uint8_t *input_data(size_t *len)
{
	*len = cur->end - cur->start;
	return cur->data + cur->start;
}

void input_take(size_t n, struct input_chunk **ref)
{
	if (ref != NULL) {
		cur->refs++;
		*ref = cur;
	}
	cur->start += n;
}
