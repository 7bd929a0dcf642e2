/* SPDX-License-Identifier: ISC
 * Copyright (c) 2026 The uring-sftp-server developers.  See LICENSE. */
/* Bounded wire buffers.  A reader never trusts a length from the wire: every
 * get checks what is left and fails with BUF_ERR_SHORT.  A writer grows up
 * to its limit and fails with BUF_ERR_FULL past it. */
#ifndef BUF_H
#define BUF_H

#include <stddef.h>
#include <stdint.h>

#define BUF_OK 0
#define BUF_ERR_SHORT (-1)  /* not enough bytes left to read */
#define BUF_ERR_FULL (-2)   /* write would pass the buffer's limit */
#define BUF_ERR_NOMEM (-3)  /* allocation failed */
#define BUF_ERR_FORMAT (-4) /* e.g. a NUL inside a C string */

/* Read cursor over bytes owned by someone else. */
struct rbuf {
	const uint8_t *data;
	size_t len;
	size_t off;
};

void rbuf_init(struct rbuf *r, const void *data, size_t len);
size_t rbuf_left(const struct rbuf *r);
int rbuf_get_u8(struct rbuf *r, uint8_t *v);
int rbuf_get_u32(struct rbuf *r, uint32_t *v);
int rbuf_get_u64(struct rbuf *r, uint64_t *v);
/* A uint32-length string; *p points into the reader's bytes. */
int rbuf_get_string(struct rbuf *r, const uint8_t **p, size_t *len);
/* A string with no NUL inside, copied and NUL-terminated (free it). */
int rbuf_get_cstring(struct rbuf *r, char **s);
int rbuf_skip(struct rbuf *r, size_t n);

/* Growable output buffer with a hard limit. */
struct wbuf {
	uint8_t *data;
	size_t len;
	size_t cap;
	size_t max;
};

void wbuf_init(struct wbuf *w, size_t max);
void wbuf_free(struct wbuf *w);
void wbuf_reset(struct wbuf *w);
/* Make room for n more bytes; returns a pointer to them (len unchanged). */
int wbuf_reserve(struct wbuf *w, size_t n, uint8_t **p);
int wbuf_put(struct wbuf *w, const void *p, size_t n);
int wbuf_put_u8(struct wbuf *w, uint8_t v);
int wbuf_put_u32(struct wbuf *w, uint32_t v);
int wbuf_put_u64(struct wbuf *w, uint64_t v);
int wbuf_put_string(struct wbuf *w, const void *p, size_t n);
int wbuf_put_cstring(struct wbuf *w, const char *s);
/* Overwrite 4 bytes at off (used to patch packet lengths). */
int wbuf_poke_u32(struct wbuf *w, size_t off, uint32_t v);

/* Big-endian helpers for code that frames raw bytes. */
uint32_t peek_u32(const uint8_t *p);
void poke_u32(uint8_t *p, uint32_t v);
void poke_u64(uint8_t *p, uint64_t v);

#endif
