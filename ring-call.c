/* SPDX-License-Identifier: ISC
 * Copyright (c) 2026 The uring-sftp-server developers.  See LICENSE. */
/* Calls made through the ring: see ring-call.h. */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <string.h>

#include "attrib.h"
#include "backend.h"
#include "confine.h"
#include "log.h"
#include "reply.h"
#include "ring-call.h"

/* The loop's part once the ring answered: the reply the handler gives
 * from the same call's answer. */
static void ring_result_finish(struct request *req)
{
	if (req->io.result < 0)
		errno = (int)-req->io.result;
	send_result(req, req->io.result < 0 ? -1 : 0);
}

static void ring_stat_finish(struct request *req)
{
	struct attrib a;

	if (req->io.result < 0) {
		errno = (int)-req->io.result;
		send_errno(req);
		return;
	}
	attrib_from_statx(&req->meta_stx, &a);
	send_attrib(req, &a);
}

int ring_call(struct request *req, int opcode, int fd, char *path, char *path2,
              int at_flags, mode_t mode)
{
	/* Nothing would resolve it beneath DIR (request_ring_op keeps
	 * confined paths off the ring; tests/confine.sh checks this). */
	if (path != NULL && confine_active())
		fatal_exit(255, "request %u: a confined path for io_uring",
		           req->id);
	memset(&req->io, 0, sizeof(req->io));
	req->io.opcode = (enum io_opcode)opcode;
	req->io.fd = fd;
	req->io.fd_out = AT_FDCWD;
	req->meta_path[0] = path;
	req->meta_path[1] = path2;
	req->io.path = path != NULL ? path : ""; /* statx of fd itself */
	req->io.path2 = path2;
	req->io.at_flags = at_flags;
	req->io.mode = mode;
	req->io.buf = &req->meta_stx;
	req->io.owner = req;
	req->io_finish =
	    opcode == IO_STATX ? ring_stat_finish : ring_result_finish;
	return HANDLER_IO;
}
