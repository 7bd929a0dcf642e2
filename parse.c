/* SPDX-License-Identifier: ISC
 * Copyright (c) 2026 The uring-sftp-server developers.  See LICENSE. */
/* Reading request fields, and the fatal line OpenSSH logs when one is
 * malformed.  The texts are OpenSSH 9.2's, which the difftest compares. */
#include "config.h"

#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "confine.h"
#include "handle.h"
#include "request.h"
#include "log.h"
#include "parse.h"
#include "reply.h"
#include "sftp.h"
#include "status.h"

/* sshbuf refuses a string whose length word passes its 128 MiB cap before
 * it looks at what is left, and says so differently. */
#define SSHBUF_STRING_MAX (0x8000000 - 4)

const char *field_error(const struct rbuf *r, int rc, int is_string)
{
	if (rc == BUF_ERR_FORMAT)
		return "invalid format";
	if (rc == BUF_ERR_NOMEM)
		return "memory allocation failed";
	if (is_string && rbuf_left(r) >= 4 &&
	    peek_u32(r->data + r->off) > SSHBUF_STRING_MAX)
		return "string is too large";
	return "incomplete message";
}

/* The bytes of the fixed fields that flags says follow it. */
static size_t attrib_fixed_len(uint32_t flags)
{
	size_t len = 0;

	if (flags & SSH2_FILEXFER_ATTR_SIZE)
		len += 8;
	if (flags & SSH2_FILEXFER_ATTR_UIDGID)
		len += 8;
	if (flags & SSH2_FILEXFER_ATTR_PERMISSIONS)
		len += 4;
	if (flags & SSH2_FILEXFER_ATTR_ACMODTIME)
		len += 8;
	return len;
}

/* Why 9.2's decode_attrib() fails on these attributes: walk them as it
 * does, to the field it stops at.  9.2 has no cap on the extended pairs
 * (our decoder refuses more than 0x100000 up front, as 9.4 does): it reads
 * pairs until one is malformed or the packet runs out. */
const char *attrib_error(struct rbuf r)
{
	uint32_t flags, count, i;
	const uint8_t *data;
	size_t len;
	char *name;
	int rc;

	if ((rc = rbuf_get_u32(&r, &flags)) != BUF_OK)
		return field_error(&r, rc, 0);
	if ((rc = rbuf_skip(&r, attrib_fixed_len(flags))) != BUF_OK)
		return field_error(&r, rc, 0);
	if (!(flags & SSH2_FILEXFER_ATTR_EXTENDED))
		return "incomplete message"; /* not reached: those decode */
	if ((rc = rbuf_get_u32(&r, &count)) != BUF_OK)
		return field_error(&r, rc, 0);
	for (i = 0; i < count; i++) {
		if ((rc = rbuf_get_cstring(&r, &name)) != BUF_OK)
			return field_error(&r, rc, 1);
		free(name);
		if ((rc = rbuf_get_string(&r, &data, &len)) != BUF_OK)
			return field_error(&r, rc, 1);
	}
	return "incomplete message"; /* not reached: count fits */
}

int parse_fail_step(struct request *req, const char *fn, const char *step,
                    const char *why)
{
	snprintf(req->fatal, sizeof(req->fatal), "%s: %s: %s", fn, step, why);
	return HANDLER_PARSE_ERROR;
}

int parse_fail(struct request *req, const char *fn, const char *why)
{
	return parse_fail_step(req, fn, "parse", why);
}

/* 0, or the fatal line for a field that failed with rc. */
static int field(struct request *req, const char *fn, int rc, int is_string)
{
	if (rc == BUF_OK)
		return 0;
	return parse_fail(req, fn, field_error(&req->body, rc, is_string));
}

/*
 * The choke point of --confine: every path a request carries comes through
 * here, and under confinement leaves as its resolution beneath the
 * confinement directory (confine_resolve), so that the handler's system
 * call cannot reach outside whatever the path, its symlinks or its ".."
 * say.  use (enum path_use) says whether the request follows a final
 * symlink; the readers take it from the handler table (path_use_of).  A
 * path that cannot be resolved is answered here with its status.
 */
int confine_path(struct request *req, const char *fn, int use, char **path)
{
	char resolved[PATH_MAX], *copy;
	int rc;

	if (!confine_active() || use == PATH_NOT_RESOLVED)
		return 0;
	rc = confine_resolve(*path, use == PATH_FOLLOW ? CONFINE_FOLLOW : 0,
	                     resolved);
	if (rc == 0 && (copy = strdup(resolved)) == NULL)
		fatal_exit(255, "%s: out of memory", fn);
	free(*path);
	*path = NULL;
	if (rc != 0) {
		send_status(req, errno_to_status(-rc));
		/* A handler that takes any failure here for a parse error
		 * ends the session rather than running unconfined. */
		snprintf(req->fatal, sizeof(req->fatal),
		         "%s: path refused by --confine", fn);
		return HANDLER_REFUSED;
	}
	*path = copy;
	return 0;
}

int get_string(struct request *req, const char *fn, char **s)
{
	return field(req, fn, rbuf_get_cstring(&req->body, s), 1);
}

int get_path(struct request *req, const char *fn, char **path)
{
	int rc = field(req, fn, rbuf_get_cstring(&req->body, path), 1);

	if (rc != 0)
		return rc;
	return confine_path(req, fn, path_use_of(req, 0), path);
}

int get_two_paths(struct request *req, const char *fn, char **a, char **b)
{
	int rc;

	/* Both are read before either is resolved: a parse error in the
	 * second wins over a refusal of the first, as without --confine. */
	if ((rc = field(req, fn, rbuf_get_cstring(&req->body, a), 1)) != 0)
		return rc;
	if ((rc = field(req, fn, rbuf_get_cstring(&req->body, b), 1)) != 0) {
		free(*a);
		return rc;
	}
	if ((rc = confine_path(req, fn, path_use_of(req, 0), a)) != 0) {
		free(*b);
		return rc;
	}
	if ((rc = confine_path(req, fn, path_use_of(req, 1), b)) != 0) {
		free(*a);
		return rc;
	}
	return 0;
}

int get_attrib(struct request *req, const char *fn, struct attrib *a)
{
	struct rbuf saved = req->body;

	if (attrib_decode(&req->body, a) != BUF_OK)
		return parse_fail(req, fn, attrib_error(saved));
	return 0;
}

int get_path_attrib(struct request *req, const char *fn, char **path,
                    struct attrib *a)
{
	int rc = field(req, fn, rbuf_get_cstring(&req->body, path), 1);

	if (rc != 0)
		return rc;
	if (get_attrib(req, fn, a) != 0) {
		free(*path);
		return HANDLER_PARSE_ERROR;
	}
	return confine_path(req, fn, path_use_of(req, 0), path);
}

int get_u32(struct request *req, const char *fn, uint32_t *v)
{
	return field(req, fn, rbuf_get_u32(&req->body, v), 0);
}

int get_u64(struct request *req, const char *fn, uint64_t *v)
{
	return field(req, fn, rbuf_get_u64(&req->body, v), 0);
}

int get_data(struct request *req, const char *fn, const uint8_t **p,
             size_t *len)
{
	return field(req, fn, rbuf_get_string(&req->body, p, len), 1);
}

/* A handle is a string on the wire, so it fails as a string does. */
int get_handle(struct request *req, const char *fn, int *idx)
{
	return field(req, fn, handle_parse(&req->body, idx), 1);
}

int fields_well_formed(struct rbuf r, const char *shape)
{
	struct attrib a;
	uint32_t u32;
	uint64_t u64;
	char *str;
	int rc = BUF_OK;

	for (; rc == BUF_OK && *shape != '\0'; shape++) {
		switch (*shape) {
		case 's':
			if ((rc = rbuf_get_cstring(&r, &str)) == BUF_OK)
				free(str);
			break;
		case 'u':
			rc = rbuf_get_u32(&r, &u32);
			break;
		case 'U':
			rc = rbuf_get_u64(&r, &u64);
			break;
		case 'a':
			rc = attrib_decode(&r, &a);
			break;
		default:
			return 0;
		}
	}
	return rc == BUF_OK;
}
