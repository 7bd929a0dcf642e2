/* SPDX-License-Identifier: ISC
 * Copyright (c) 2026 The uring-sftp-server developers.  See LICENSE. */
/* Encoding one reply packet into req->reply.  A reply that does not fit its
 * buffer is a bug on our side, not the client's: encoding errors abort the
 * session rather than send a broken packet. */
#include "config.h"

#include <errno.h>

#include "handle.h"
#include "log.h"
#include "reply.h"
#include "server.h"
#include "sftp.h"
#include "status.h"

static void reply_check(int rc)
{
	if (rc != BUF_OK)
		fatal_exit(255, "reply: encode failed (%d)", rc);
}

void reply_begin(struct request *req, uint8_t type)
{
	wbuf_reset(&req->reply);
	reply_check(wbuf_put_u32(&req->reply, 0)); /* length, patched later */
	reply_check(wbuf_put_u8(&req->reply, type));
	reply_check(wbuf_put_u32(&req->reply, req->id));
}

void reply_end(struct request *req)
{
	reply_check(wbuf_poke_u32(&req->reply, 0, req->reply.len - 4));
}

void send_status_msg(struct request *req, uint32_t code, const char *msg)
{
	debug3("request %u: sent status %u", req->id, code);
	if (log_get_level() > LOG_LEVEL_VERBOSE ||
	    (code != SSH2_FX_OK && code != SSH2_FX_EOF))
		logit("sent status %s", status_message(code));
	reply_begin(req, SSH2_FXP_STATUS);
	reply_check(wbuf_put_u32(&req->reply, code));
	/* Version 0-2 clients get the bare code, as OpenSSH sends it. */
	if (srv.client_version >= 3) {
		reply_check(wbuf_put_cstring(&req->reply, msg));
		reply_check(wbuf_put_cstring(&req->reply, ""));
	}
	reply_end(req);
}

void send_status(struct request *req, uint32_t code)
{
	send_status_msg(req, code, status_message(code));
}

void send_errno(struct request *req)
{
	send_status(req, errno_to_status(errno));
}

void send_result(struct request *req, int rc)
{
	if (rc == -1)
		send_errno(req);
	else
		send_status(req, SSH2_FX_OK);
}

void send_handle(struct request *req, int idx)
{
	debug("request %u: sent handle handle %d", req->id, idx);
	reply_begin(req, SSH2_FXP_HANDLE);
	reply_check(handle_put(&req->reply, idx));
	reply_end(req);
}

void send_attrib(struct request *req, const struct attrib *a)
{
	debug("request %u: sent attrib have 0x%x", req->id, a->flags);
	reply_begin(req, SSH2_FXP_ATTRS);
	reply_check(attrib_encode(&req->reply, a));
	reply_end(req);
}

void send_one_name(struct request *req, const char *path)
{
	struct attrib a;

	attrib_clear(&a);
	debug("request %u: sent names count %d", req->id, 1);
	reply_begin(req, SSH2_FXP_NAME);
	reply_check(wbuf_put_u32(&req->reply, 1));
	reply_check(wbuf_put_cstring(&req->reply, path));
	reply_check(wbuf_put_cstring(&req->reply, path));
	reply_check(attrib_encode(&req->reply, &a));
	reply_end(req);
}
