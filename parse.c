/* Reading request fields, and the fatal line OpenSSH logs when one is
 * malformed.  The texts are OpenSSH 9.2's, which the difftest compares. */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>

#include "handle.h"
#include "parse.h"
#include "sftp.h"

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

int get_path(struct request *req, const char *fn, char **path)
{
	return field(req, fn, rbuf_get_cstring(&req->body, path), 1);
}

int get_two_paths(struct request *req, const char *fn, char **a, char **b)
{
	if (get_path(req, fn, a) != 0)
		return HANDLER_PARSE_ERROR;
	if (get_path(req, fn, b) != 0) {
		free(*a);
		return HANDLER_PARSE_ERROR;
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
	if (get_path(req, fn, path) != 0)
		return HANDLER_PARSE_ERROR;
	if (get_attrib(req, fn, a) != 0) {
		free(*path);
		return HANDLER_PARSE_ERROR;
	}
	return 0;
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
