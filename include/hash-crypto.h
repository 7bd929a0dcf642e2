/* SPDX-License-Identifier: ISC
 * Copyright (c) 2026 The uring-sftp-server developers.  See LICENSE. */
/* The libcrypto functions hash.c calls, as a table.  A dynamic build
 * fills it from libcrypto when a hash is first asked for (dlopen: the
 * library's 17K relocations cost every session 2 ms at start otherwise);
 * a static build, which cannot load libraries, links them in and provides
 * the table filled (crypto-linked.c). */
#ifndef HASH_CRYPTO_H
#define HASH_CRYPTO_H

#include <openssl/evp.h>

/* md5, sha1, sha224, sha256, sha384, sha512: hash.c's order. */
#define HASH_CRYPTO_MDS 6

struct hash_crypto {
	const EVP_MD *(*md[HASH_CRYPTO_MDS])(void);
	EVP_MD_CTX *(*ctx_new)(void);
	int (*init)(EVP_MD_CTX *, const EVP_MD *, ENGINE *);
	int (*update)(EVP_MD_CTX *, const void *, size_t);
	int (*final)(EVP_MD_CTX *, unsigned char *, unsigned int *);
	void (*ctx_free)(EVP_MD_CTX *);
};

/* Defined only in static builds (crypto-linked.c). */
extern const struct hash_crypto hash_crypto_linked __attribute__((weak));

#endif
