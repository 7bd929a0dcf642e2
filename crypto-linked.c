/* SPDX-License-Identifier: ISC
 * Copyright (c) 2026 The uring-sftp-server developers.  See LICENSE. */
/* Static builds only: libcrypto linked in, its functions in hash.c's
 * table (hash-crypto.h), as such a build cannot load the library. */
#include "config.h"

#include "hash-crypto.h"

const struct hash_crypto hash_crypto_linked = {
    .md = {EVP_md5, EVP_sha1, EVP_sha224, EVP_sha256, EVP_sha384, EVP_sha512},
    .ctx_new = EVP_MD_CTX_new,
    .init = EVP_DigestInit_ex,
    .update = EVP_DigestUpdate,
    .final = EVP_DigestFinal_ex,
    .ctx_free = EVP_MD_CTX_free,
};
