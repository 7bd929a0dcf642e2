/* SPDX-License-Identifier: ISC
 * Copyright (c) 2026 The uring-sftp-server developers.  See LICENSE. */
/* Reading request fields as OpenSSH's sftp-server reads them.  A malformed
 * body is fatal there, and the line it logs (fn, step and ssh_err() text)
 * is part of what we must reproduce, so each helper also records that line
 * in req->fatal. */
#ifndef PARSE_H
#define PARSE_H

#include "attrib.h"
#include "buf.h"
#include "request.h"

/* OpenSSH's ssh_err() text for a field that could not be read (rc is the
 * BUF_* code); is_string when that field is a string, r the reader still
 * positioned at it. */
const char *field_error(const struct rbuf *r, int rc, int is_string);
/* OpenSSH 9.2's text for attributes that failed to decode; saved is the
 * reader as it was before the attempt. */
const char *attrib_error(struct rbuf saved);

/* Record "<fn>: <step>: <why>" as the fatal line and return
 * HANDLER_PARSE_ERROR.  parse_fail is the common step "parse". */
int parse_fail_step(struct request *req, const char *fn, const char *step,
                    const char *why);
int parse_fail(struct request *req, const char *fn, const char *why);

/* Field readers; fn names the OpenSSH function for the fatal line.  Each
 * returns 0, or HANDLER_PARSE_ERROR with nothing left allocated.
 *
 * The path readers also return HANDLER_REFUSED, with nothing allocated,
 * when --confine refused a path: the status is already encoded.  Handlers
 * return what they got:  if ((rc = get_path(...)) != 0) return rc;
 * Under --confine the paths come back resolved beneath the confinement
 * directory (see confine_path in parse.c). */
int get_path(struct request *req, const char *fn, char **path);
/* A string that is not resolved as a path here: an extension's name, or a
 * path its handler resolves itself with confine_path once every field is
 * read (OPEN, OPENDIR).  0 or HANDLER_PARSE_ERROR. */
int get_string(struct request *req, const char *fn, char **s);
/* Two path strings (old, new), as RENAME, SYMLINK and friends carry them. */
int get_two_paths(struct request *req, const char *fn, char **a, char **b);
/* A path followed by attributes (SETSTAT, MKDIR, lsetstat). */
int get_path_attrib(struct request *req, const char *fn, char **path,
                    struct attrib *a);
int get_handle(struct request *req, const char *fn, int *idx);
int get_u32(struct request *req, const char *fn, uint32_t *v);
int get_u64(struct request *req, const char *fn, uint64_t *v);
/* A string of bytes (WRITE's data), pointing into the packet. */
int get_data(struct request *req, const char *fn, const uint8_t **p,
             size_t *len);
int get_attrib(struct request *req, const char *fn, struct attrib *a);

/* Would fields of this shape (s a string, u a uint32, U a uint64, a
 * attributes) read from r without a parse error?  Reads a copy. */
int fields_well_formed(struct rbuf r, const char *shape);

/* The one place where --confine resolves a request's path (the readers
 * above call it): for a handler that reads its path field itself, call it
 * once all fields are read, with use = path_use_of(req, n) for its n-th
 * path (or PATH_NOFOLLOW where the request does not follow a final symlink
 * this time).  Returns 0 (path replaced by its resolution) or
 * HANDLER_REFUSED (path freed and NULL, status encoded). */
int confine_path(struct request *req, const char *fn, int use, char **path);

#endif
