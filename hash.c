/* SPDX-License-Identifier: ISC
 * Copyright (c) 2026 The uring-sftp-server developers.  See LICENSE. */
/* Hash algorithms for check-file: libcrypto's EVP digests (with their
 * SHA-NI/AVX2 code) and zlib's crc32.  No hash code of our own. */
#include "config.h"

#include <openssl/evp.h>
#include <string.h>
#include <zlib.h>

#include "hash.h"

struct hash_algo {
	const char *name;
	const EVP_MD *(*md)(void); /* NULL: crc32 */
	size_t len;
};

/* The draft's list (HASH_NAMES).  The client's list gives the choice. */
static const struct hash_algo algos[] = {
    {"md5", EVP_md5, 16},       {"sha1", EVP_sha1, 20},
    {"sha224", EVP_sha224, 28}, {"sha256", EVP_sha256, 32},
    {"sha384", EVP_sha384, 48}, {"sha512", EVP_sha512, 64},
    {"crc32", NULL, 4},
};

#define NALGOS (sizeof(algos) / sizeof(algos[0]))

static const struct hash_algo *by_name(const char *name, size_t len)
{
	size_t i;

	for (i = 0; i < NALGOS; i++)
		if (strlen(algos[i].name) == len &&
		    memcmp(algos[i].name, name, len) == 0)
			return &algos[i];
	return NULL;
}

const struct hash_algo *hash_pick(const char *list, size_t len)
{
	const struct hash_algo *a;
	const char *p = list, *end = list + len, *comma;

	while (p < end) {
		comma = memchr(p, ',', (size_t)(end - p));
		if (comma == NULL)
			comma = end;
		if ((a = by_name(p, (size_t)(comma - p))) != NULL)
			return a;
		p = comma + 1;
	}
	return NULL;
}

const char *hash_algo_name(const struct hash_algo *a)
{
	return a->name;
}

size_t hash_algo_len(const struct hash_algo *a)
{
	return a->len;
}

int hash_init(struct hash_ctx *c, const struct hash_algo *a)
{
	memset(c, 0, sizeof(*c));
	c->algo = a;
	if (a->md == NULL) {
		c->crc = (uint32_t)crc32(0L, Z_NULL, 0);
		return 0;
	}
	if ((c->md = EVP_MD_CTX_new()) == NULL)
		return -1;
	if (EVP_DigestInit_ex(c->md, a->md(), NULL) != 1) {
		hash_free(c);
		return -1;
	}
	return 0;
}

int hash_update(struct hash_ctx *c, const void *data, size_t len)
{
	const uint8_t *p = data;
	uInt n;

	if (c->md != NULL)
		return EVP_DigestUpdate(c->md, data, len) == 1 ? 0 : -1;
	/* zlib takes at most a uInt at a time. */
	while (len > 0) {
		n = len > 0x40000000 ? 0x40000000 : (uInt)len;
		c->crc = (uint32_t)crc32(c->crc, p, n);
		p += n;
		len -= n;
	}
	return 0;
}

int hash_final(struct hash_ctx *c, uint8_t *out)
{
	if (c->md == NULL) {
		/* Big-endian, as every client prints a crc32. */
		out[0] = (uint8_t)(c->crc >> 24);
		out[1] = (uint8_t)(c->crc >> 16);
		out[2] = (uint8_t)(c->crc >> 8);
		out[3] = (uint8_t)c->crc;
		c->crc = (uint32_t)crc32(0L, Z_NULL, 0);
		return 0;
	}
	if (EVP_DigestFinal_ex(c->md, out, NULL) != 1 ||
	    EVP_DigestInit_ex(c->md, c->algo->md(), NULL) != 1)
		return -1;
	return 0;
}

void hash_free(struct hash_ctx *c)
{
	if (c->md != NULL)
		EVP_MD_CTX_free(c->md);
	c->md = NULL;
}
