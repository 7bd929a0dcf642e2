/* SPDX-License-Identifier: ISC
 * Copyright (c) 2026 The uring-sftp-server developers.  See LICENSE. */
/* The hash algorithms of check-file (draft-ietf-secsh-filexfer-extensions-00,
 * "Checking File Contents"): md5, sha1, sha224, sha256, sha384, sha512 from
 * OpenSSL's libcrypto and crc32 from zlib, behind one small interface. */
#ifndef HASH_H
#define HASH_H

#include <stddef.h>
#include <stdint.h>

/* Every supported name, comma-separated, in the draft's order (the data of
 * the check-file extensions in VERSION). */
#define HASH_NAMES "md5,sha1,sha224,sha256,sha384,sha512,crc32"

/* The longest digest (sha512). */
#define HASH_MAX_DIGEST 64

struct hash_algo;

struct hash_ctx {
	const struct hash_algo *algo;
	void *md;     /* EVP_MD_CTX, for the libcrypto ones */
	uint32_t crc; /* crc32 */
};

/* The first name in list (comma-separated, as the client sends it) that we
 * support, or NULL.  Names are compared exactly, as the draft's are
 * lower-case. */
const struct hash_algo *hash_pick(const char *list, size_t len);
const char *hash_algo_name(const struct hash_algo *a);
size_t hash_algo_len(const struct hash_algo *a);

/* Find libcrypto's functions now (hash-crypto.h): linked in, or loaded
 * from the library.  hash_init does it when first needed; --confine does
 * it before Landlock shuts the library's directory.  0, or -1 when the
 * library cannot be loaded (then every libcrypto algorithm fails). */
int hash_crypto_load(void);

/* 0, or -1 when libcrypto failed (not loadable, out of memory, or a
 * provider that refuses the algorithm, as a FIPS one refuses md5). */
int hash_init(struct hash_ctx *c, const struct hash_algo *a);
int hash_update(struct hash_ctx *c, const void *data, size_t len);
/* Write the digest (hash_algo_len bytes) and make c ready for the next
 * one of the same algorithm (for per-block hashes). */
int hash_final(struct hash_ctx *c, uint8_t *out);
void hash_free(struct hash_ctx *c);

#endif
