/* SPDX-License-Identifier: ISC
 * Copyright (c) 2026 The uring-sftp-server developers.  See LICENSE. */
/* JSON strings: see json.h. */
#include "config.h"

#include <stdio.h>
#include <string.h>

#include "json.h"

/* The length of the valid UTF-8 sequence at s (1 to 4 bytes), or 0 when
 * the bytes there are not one: a stray continuation byte, a sequence cut
 * short, an overlong form, a UTF-16 surrogate (U+D800 to U+DFFF) or a
 * code point past U+10FFFF (RFC 3629). */
static size_t utf8_sequence_len(const unsigned char *s)
{
	unsigned char lo = 0x80, hi = 0xbf; /* bounds of the second byte */
	size_t len, i;

	if (s[0] < 0x80)
		return 1;
	if (s[0] >= 0xc2 && s[0] <= 0xdf)
		len = 2;
	else if (s[0] >= 0xe0 && s[0] <= 0xef)
		len = 3;
	else if (s[0] >= 0xf0 && s[0] <= 0xf4)
		len = 4;
	else
		return 0; /* 0x80-0xc1: continuation or overlong; 0xf5-0xff */
	if (s[0] == 0xe0)
		lo = 0xa0; /* overlong below U+0800 */
	else if (s[0] == 0xed)
		hi = 0x9f; /* surrogates */
	else if (s[0] == 0xf0)
		lo = 0x90; /* overlong below U+10000 */
	else if (s[0] == 0xf4)
		hi = 0x8f; /* past U+10FFFF */
	if (s[1] < lo || s[1] > hi)
		return 0;
	/* A NUL ends the string and is no continuation byte: a sequence cut
	 * short at the end is caught here. */
	for (i = 2; i < len; i++)
		if (s[i] < 0x80 || s[i] > 0xbf)
			return 0;
	return len;
}

size_t json_escape(char *out, size_t room, const char *s)
{
	const unsigned char *p = (const unsigned char *)s;
	size_t n = 0, len;

	while (*p != '\0' && n + 6 < room) {
		len = utf8_sequence_len(p);
		if (len == 0) {
			n += (size_t)snprintf(out + n, room - n, "\\udc%02x",
			                      *p);
			p++;
		} else if (*p == '"' || *p == '\\') {
			out[n++] = '\\';
			out[n++] = (char)*p++;
		} else if (*p < 0x20 || *p == 0x7f) {
			n += (size_t)snprintf(out + n, room - n, "\\u%04x", *p);
			p++;
		} else {
			memcpy(out + n, p, len);
			n += len;
			p += len;
		}
	}
	out[n] = '\0';
	return n;
}
