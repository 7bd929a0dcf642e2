/* SPDX-License-Identifier: ISC
 * Copyright (c) 2026 The uring-sftp-server developers.  See LICENSE. */
/* JSON strings for what the server writes as JSON: the transfer log's
 * lines (xferlog.c) and --check=json (hostcheck.c). */
#ifndef JSON_H
#define JSON_H

#include <stddef.h>

/* A string escaped by json_escape takes at most 6 bytes per byte
 * ("\udcXX"), and its NUL. */
#define JSON_ESCAPED_MAX(n) ((n)*6 + 1)

/*
 * A JSON string's contents for the bytes of s, losslessly: valid UTF-8
 * passes through, '"' and '\' are escaped, control characters (below
 * 0x20, and DEL) become \u00XX, and each byte that is not part of valid
 * UTF-8 becomes \udcXX, XX being the byte (0x80 to 0xff).  That is the
 * mapping of PEP 383 ("surrogateescape"), the one Python uses for file
 * names that are not UTF-8: json.loads reads every line, and
 * os.fsencode() (or str.encode("utf-8", "surrogateescape")) of a field
 * gives back its exact bytes.  No valid UTF-8 decodes to U+DC80-U+DCFF,
 * so an escaped byte is never mistaken for a character.  room must be
 * JSON_ESCAPED_MAX(strlen(s)) or more for nothing to be cut.
 */
size_t json_escape(char *out, size_t room, const char *s);

#endif
