/* SPDX-License-Identifier: ISC
 * Copyright (c) 2026 The uring-sftp-server developers.  See LICENSE. */
/* SFTP v3 attributes on the wire, and the "ls -l" long name that READDIR
 * sends, both byte for byte as OpenSSH's sftp-server does. */
#include "config.h"

#include <pthread.h>
#include <grp.h>
#include <locale.h>
#include <pwd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "attrib.h"
#include "log.h"
#include "sftp.h"

/* OpenSSH 9.4+ refuses more extended pairs than this. */
#define ATTRIB_EXTENDED_MAX 0x100000

/* strmode() writes 10 characters, a trailing space and a NUL. */
#define MODE_STRING_SIZE 12

/* Dates in the last half year show the time instead of the year. */
#define RECENT_SECONDS ((time_t)(365 * 24 * 60 * 60) / 2)

void attrib_clear(struct attrib *a)
{
	memset(a, 0, sizeof(*a));
}

/* Extended pairs carry nothing we use; check their framing and drop them. */
static int skip_extended(struct rbuf *r)
{
	uint32_t count, i;
	int rc;

	rc = rbuf_get_u32(r, &count);
	if (rc != BUF_OK)
		return rc;
	if (count > ATTRIB_EXTENDED_MAX)
		return BUF_ERR_FORMAT;

	for (i = 0; i < count; i++) {
		const uint8_t *type, *data, *nul;
		size_t type_len, data_len;

		rc = rbuf_get_string(r, &type, &type_len);
		if (rc != BUF_OK)
			return rc;
		/* OpenSSH reads the type as a C string: a NUL may only end
		 * it. */
		nul = memchr(type, '\0', type_len);
		if (nul != NULL && nul != type + type_len - 1)
			return BUF_ERR_FORMAT;
		rc = rbuf_get_string(r, &data, &data_len);
		if (rc != BUF_OK)
			return rc;
		debug3("Got file attribute \"%.*s\" len %zu",
		       (int)(type_len < 100 ? type_len : 100),
		       (const char *)type, data_len);
	}
	return BUF_OK;
}

int attrib_decode(struct rbuf *r, struct attrib *a)
{
	int rc;

	attrib_clear(a);
	rc = rbuf_get_u32(r, &a->flags);
	if (rc == BUF_OK && (a->flags & SSH2_FILEXFER_ATTR_SIZE))
		rc = rbuf_get_u64(r, &a->size);
	if (rc == BUF_OK && (a->flags & SSH2_FILEXFER_ATTR_UIDGID)) {
		rc = rbuf_get_u32(r, &a->uid);
		if (rc == BUF_OK)
			rc = rbuf_get_u32(r, &a->gid);
	}
	if (rc == BUF_OK && (a->flags & SSH2_FILEXFER_ATTR_PERMISSIONS))
		rc = rbuf_get_u32(r, &a->perm);
	if (rc == BUF_OK && (a->flags & SSH2_FILEXFER_ATTR_ACMODTIME)) {
		rc = rbuf_get_u32(r, &a->atime);
		if (rc == BUF_OK)
			rc = rbuf_get_u32(r, &a->mtime);
	}
	if (rc == BUF_OK && (a->flags & SSH2_FILEXFER_ATTR_EXTENDED))
		rc = skip_extended(r);
	return rc;
}

int attrib_encode(struct wbuf *w, const struct attrib *a)
{
	int rc;

	rc = wbuf_put_u32(w, a->flags);
	if (rc == BUF_OK && (a->flags & SSH2_FILEXFER_ATTR_SIZE))
		rc = wbuf_put_u64(w, a->size);
	if (rc == BUF_OK && (a->flags & SSH2_FILEXFER_ATTR_UIDGID)) {
		rc = wbuf_put_u32(w, a->uid);
		if (rc == BUF_OK)
			rc = wbuf_put_u32(w, a->gid);
	}
	if (rc == BUF_OK && (a->flags & SSH2_FILEXFER_ATTR_PERMISSIONS))
		rc = wbuf_put_u32(w, a->perm);
	if (rc == BUF_OK && (a->flags & SSH2_FILEXFER_ATTR_ACMODTIME)) {
		rc = wbuf_put_u32(w, a->atime);
		if (rc == BUF_OK)
			rc = wbuf_put_u32(w, a->mtime);
	}
	/* We never send extended pairs, but a set flag needs its count. */
	if (rc == BUF_OK && (a->flags & SSH2_FILEXFER_ATTR_EXTENDED))
		rc = wbuf_put_u32(w, 0);
	return rc;
}

void attrib_from_stat(const struct stat *st, struct attrib *a)
{
	attrib_clear(a);
	a->flags = SSH2_FILEXFER_ATTR_SIZE | SSH2_FILEXFER_ATTR_UIDGID |
	           SSH2_FILEXFER_ATTR_PERMISSIONS |
	           SSH2_FILEXFER_ATTR_ACMODTIME;
	a->size = (uint64_t)st->st_size;
	a->uid = st->st_uid;
	a->gid = st->st_gid;
	/* The full st_mode, file type bits included: clients rely on them. */
	a->perm = st->st_mode;
	/* v3 has 32-bit times; OpenSSH truncates the same way. */
	a->atime = (uint32_t)st->st_atime;
	a->mtime = (uint32_t)st->st_mtime;
}

void attrib_from_statx(const struct statx *stx, struct attrib *a)
{
	struct stat st;

	memset(&st, 0, sizeof(st));
	st.st_size = (off_t)stx->stx_size;
	st.st_uid = stx->stx_uid;
	st.st_gid = stx->stx_gid;
	st.st_mode = stx->stx_mode;
	st.st_atime = (time_t)stx->stx_atime.tv_sec;
	st.st_mtime = (time_t)stx->stx_mtime.tv_sec;
	attrib_from_stat(&st, a);
}

/*
 * Month names must be the C locale's even if someone calls setlocale():
 * OpenSSH never does, and clients may parse the long name.
 */
static locale_t c_locale(void)
{
	static locale_t loc;

	if (loc == (locale_t)0)
		loc = newlocale(LC_ALL_MASK, "C", (locale_t)0);
	return loc;
}

/* "Nov 29 13:39" for the last half year, "Nov 29  2023" otherwise. */
static void format_date(char *out, size_t size, time_t mtime, time_t now)
{
	const char *fmt;
	struct tm tm;
	locale_t loc = c_locale();
	size_t n;

	out[0] = '\0';
	if (localtime_r(&mtime, &tm) == NULL)
		return;
	if (now - RECENT_SECONDS < mtime && mtime <= now)
		fmt = "%b %e %H:%M";
	else
		fmt = "%b %e  %Y";
	if (loc != (locale_t)0)
		n = strftime_l(out, size, fmt, &tm, loc);
	else
		n = strftime(out, size, fmt, &tm);
	if (n == 0)
		out[0] = '\0';
}

/* Names are at least 8 wide so the columns line up for most systems. */
static int column_width(const char *s)
{
	size_t len = strlen(s);

	return len < 8 ? 8 : (int)len;
}

static pthread_mutex_t names_lock = PTHREAD_MUTEX_INITIALIZER;

char *ls_longname(const char *name, const struct stat *st, time_t now)
{
	char mode[MODE_STRING_SIZE];
	char links[16];
	char date[32];
	const char *user, *group;
	char *line;

	strmode(st->st_mode, mode);
	snprintf(links, sizeof(links), "%u", (unsigned)st->st_nlink);
	int rc;

	/* libbsd caches these look-ups, for every thread (READDIR runs in
	 * workers): one at a time.  Unknown ids come back as numbers. */
	pthread_mutex_lock(&names_lock);
	user = user_from_uid(st->st_uid, 0);
	group = group_from_gid(st->st_gid, 0);
	format_date(date, sizeof(date), st->st_mtime, now);
	rc = asprintf(&line, "%s %3s %-*s %-*s %8llu %s %s", mode, links,
	              column_width(user), user, column_width(group), group,
	              (unsigned long long)st->st_size, date, name);
	pthread_mutex_unlock(&names_lock);
	return rc < 0 ? NULL : line;
}
