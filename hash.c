/* SPDX-License-Identifier: ISC
 * Copyright (c) 2026 The uring-sftp-server developers.  See LICENSE. */
/* Hash algorithms for check-file: libcrypto's EVP digests (with their
 * SHA-NI/AVX2 code) and zlib's crc32.  No hash code of our own. */
#include "config.h"

#include <dlfcn.h>
#include <string.h>
#include <zlib.h>

#include "hash-crypto.h"
#include "hash.h"

struct hash_algo {
	const char *name;
	int md; /* index in hash_crypto's md[]; -1: crc32 */
	size_t len;
};

/* The draft's list (HASH_NAMES).  The client's list gives the choice. */
static const struct hash_algo algos[] = {
    {"md5", 0, 16},    {"sha1", 1, 20},   {"sha224", 2, 28}, {"sha256", 3, 32},
    {"sha384", 4, 48}, {"sha512", 5, 64}, {"crc32", -1, 4},
};

#define NALGOS (sizeof(algos) / sizeof(algos[0]))

/* libcrypto's functions, once found (hash_crypto_load). */
static const struct hash_crypto *crypto;

/* Fill t from libcrypto, loaded now: 0, or -1 when it or a function is
 * missing. */
static int crypto_from_library(struct hash_crypto *t)
{
	/* dlsym's void * stored as a function pointer: POSIX requires it to
	 * work. */
	const struct {
		const char *name;
		void **slot;
	} fns[] = {
	    {"EVP_md5", (void **)&t->md[0]},
	    {"EVP_sha1", (void **)&t->md[1]},
	    {"EVP_sha224", (void **)&t->md[2]},
	    {"EVP_sha256", (void **)&t->md[3]},
	    {"EVP_sha384", (void **)&t->md[4]},
	    {"EVP_sha512", (void **)&t->md[5]},
	    {"EVP_MD_CTX_new", (void **)&t->ctx_new},
	    {"EVP_DigestInit_ex", (void **)&t->init},
	    {"EVP_DigestUpdate", (void **)&t->update},
	    {"EVP_DigestFinal_ex", (void **)&t->final},
	    {"EVP_MD_CTX_free", (void **)&t->ctx_free},
	};
	void *lib = dlopen(LIBCRYPTO_SONAME, RTLD_NOW | RTLD_LOCAL);
	size_t i;

	if (lib == NULL)
		return -1;
	for (i = 0; i < sizeof(fns) / sizeof(fns[0]); i++)
		if ((*fns[i].slot = dlsym(lib, fns[i].name)) == NULL) {
			dlclose(lib);
			return -1;
		}
	return 0; /* kept loaded for the session */
}

int hash_crypto_load(void)
{
	static struct hash_crypto found;
	static int failed;

	if (crypto != NULL)
		return 0;
	if (&hash_crypto_linked != NULL) {
		crypto = &hash_crypto_linked;
		return 0;
	}
	if (failed || crypto_from_library(&found) != 0) {
		failed = 1;
		return -1;
	}
	crypto = &found;
	return 0;
}

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
	if (a->md < 0) {
		c->crc = (uint32_t)crc32(0L, Z_NULL, 0);
		return 0;
	}
	if (hash_crypto_load() != 0 || (c->md = crypto->ctx_new()) == NULL)
		return -1;
	if (crypto->init(c->md, crypto->md[a->md](), NULL) != 1) {
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
		return crypto->update(c->md, data, len) == 1 ? 0 : -1;
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
	if (crypto->final(c->md, out, NULL) != 1 ||
	    crypto->init(c->md, crypto->md[c->algo->md](), NULL) != 1)
		return -1;
	return 0;
}

void hash_free(struct hash_ctx *c)
{
	if (c->md != NULL)
		crypto->ctx_free(c->md);
	c->md = NULL;
}
