/* SPDX-License-Identifier: ISC
 * Copyright (c) 2026 The uring-sftp-server developers.  See LICENSE. */
/* Encoding replies into req->reply.  Each call writes one whole packet. */
#ifndef REPLY_H
#define REPLY_H

#include <stddef.h>
#include <stdint.h>

#include "attrib.h"
#include "request.h"

void send_status(struct request *req, uint32_t code);
/* STATUS with a custom message (expand-path's "no such user"). */
void send_status_msg(struct request *req, uint32_t code, const char *msg);
/* The status for the system call that just failed (from errno). */
void send_errno(struct request *req);
/* A system call's result (0, or -1 with errno set) as a status reply. */
void send_result(struct request *req, int rc);
void send_handle(struct request *req, int idx);
void send_attrib(struct request *req, const struct attrib *a);
/* NAME with one entry: name = longname = path, attrs flags 0. */
void send_one_name(struct request *req, const char *path);

/* For replies built by parts: begin writes the length placeholder, type and
 * id; end patches the length.  Used by NAME lists and EXTENDED_REPLY. */
void reply_begin(struct request *req, uint8_t type);
void reply_end(struct request *req);

#endif
