/* SPDX-License-Identifier: ISC
 * Copyright (c) 2026 The uring-sftp-server developers.  See LICENSE. */
/* Bounded wire buffers: see include/buf.h. */
#include "config.h"

#include <stdlib.h>
#include <string.h>

#include "buf.h"

uint32_t peek_u32(const uint8_t *p)
{
	return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 |
	       (uint32_t)p[2] << 8 | (uint32_t)p[3];
}

void poke_u32(uint8_t *p, uint32_t v)
{
	p[0] = v >> 24;
	p[1] = v >> 16;
	p[2] = v >> 8;
	p[3] = v;
}

void poke_u64(uint8_t *p, uint64_t v)
{
	poke_u32(p, v >> 32);
	poke_u32(p + 4, (uint32_t)v);
}

void rbuf_init(struct rbuf *r, const void *data, size_t len)
{
	r->data = data;
	r->len = len;
	r->off = 0;
}

size_t rbuf_left(const struct rbuf *r)
{
	return r->len - r->off;
}

int rbuf_skip(struct rbuf *r, size_t n)
{
	if (rbuf_left(r) < n)
		return BUF_ERR_SHORT;
	r->off += n;
	return BUF_OK;
}

int rbuf_get_u8(struct rbuf *r, uint8_t *v)
{
	if (rbuf_left(r) < 1)
		return BUF_ERR_SHORT;
	*v = r->data[r->off++];
	return BUF_OK;
}

int rbuf_get_u32(struct rbuf *r, uint32_t *v)
{
	if (rbuf_left(r) < 4)
		return BUF_ERR_SHORT;
	*v = peek_u32(r->data + r->off);
	r->off += 4;
	return BUF_OK;
}

int rbuf_get_u64(struct rbuf *r, uint64_t *v)
{
	uint32_t hi, lo;

	if (rbuf_left(r) < 8)
		return BUF_ERR_SHORT;
	rbuf_get_u32(r, &hi);
	rbuf_get_u32(r, &lo);
	*v = (uint64_t)hi << 32 | lo;
	return BUF_OK;
}

int rbuf_get_string(struct rbuf *r, const uint8_t **p, size_t *len)
{
	uint32_t n;

	if (rbuf_left(r) < 4)
		return BUF_ERR_SHORT;
	n = peek_u32(r->data + r->off);
	/* Compare against what is left, never add to the untrusted length. */
	if (n > rbuf_left(r) - 4)
		return BUF_ERR_SHORT;
	r->off += 4;
	*p = r->data + r->off;
	*len = n;
	r->off += n;
	return BUF_OK;
}

int rbuf_get_cstring(struct rbuf *r, char **s)
{
	const uint8_t *p, *nul;
	size_t len, saved = r->off;
	int rc;

	if ((rc = rbuf_get_string(r, &p, &len)) != BUF_OK)
		return rc;
	/* One NUL as the last byte ends the string (as OpenSSH's sshbuf
	 * allows); a NUL anywhere else is a format error. */
	if ((nul = memchr(p, '\0', len)) != NULL) {
		if (nul != p + len - 1) {
			r->off = saved;
			return BUF_ERR_FORMAT;
		}
		len--;
	}
	if ((*s = malloc(len + 1)) == NULL) {
		r->off = saved;
		return BUF_ERR_NOMEM;
	}
	memcpy(*s, p, len);
	(*s)[len] = '\0';
	return BUF_OK;
}

void wbuf_init(struct wbuf *w, size_t max)
{
	w->data = NULL;
	w->len = 0;
	w->cap = 0;
	w->max = max;
}

void wbuf_free(struct wbuf *w)
{
	free(w->data);
	wbuf_init(w, w->max);
}

void wbuf_reset(struct wbuf *w)
{
	w->len = 0;
}

int wbuf_reserve(struct wbuf *w, size_t n, uint8_t **p)
{
	size_t need, cap;
	uint8_t *data;

	if (n > w->max || w->len > w->max - n)
		return BUF_ERR_FULL;
	need = w->len + n;
	if (need > w->cap) {
		cap = w->cap ? w->cap : 256;
		while (cap < need)
			cap *= 2;
		if (cap > w->max)
			cap = w->max;
		if ((data = realloc(w->data, cap)) == NULL)
			return BUF_ERR_NOMEM;
		w->data = data;
		w->cap = cap;
	}
	if (p != NULL)
		*p = w->data + w->len;
	return BUF_OK;
}

int wbuf_put(struct wbuf *w, const void *src, size_t n)
{
	uint8_t *p;
	int rc;

	if ((rc = wbuf_reserve(w, n, &p)) != BUF_OK)
		return rc;
	if (n > 0)
		memcpy(p, src, n);
	w->len += n;
	return BUF_OK;
}

int wbuf_put_u8(struct wbuf *w, uint8_t v)
{
	return wbuf_put(w, &v, 1);
}

int wbuf_put_u32(struct wbuf *w, uint32_t v)
{
	uint8_t b[4];

	poke_u32(b, v);
	return wbuf_put(w, b, sizeof(b));
}

int wbuf_put_u64(struct wbuf *w, uint64_t v)
{
	uint8_t b[8];

	poke_u64(b, v);
	return wbuf_put(w, b, sizeof(b));
}

int wbuf_put_string(struct wbuf *w, const void *p, size_t n)
{
	int rc;

	if (n > UINT32_MAX)
		return BUF_ERR_FULL;
	if ((rc = wbuf_reserve(w, 4 + n, NULL)) != BUF_OK)
		return rc;
	wbuf_put_u32(w, (uint32_t)n);
	return wbuf_put(w, p, n);
}

int wbuf_put_cstring(struct wbuf *w, const char *s)
{
	return wbuf_put_string(w, s, strlen(s));
}

int wbuf_poke_u32(struct wbuf *w, size_t off, uint32_t v)
{
	if (off > w->len || w->len - off < 4)
		return BUF_ERR_SHORT;
	poke_u32(w->data + off, v);
	return BUF_OK;
}
