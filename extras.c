/* SPDX-License-Identifier: ISC
 * Copyright (c) 2026 The uring-sftp-server developers.  See LICENSE. */
/* WinSCP's small extras from draft-ietf-secsh-filexfer-extensions-00:
 * space-available, and vendor-id both ways (ours in VERSION, the
 * client's as a request). */
#include "config.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/statvfs.h>

#include "buf.h"
#include "confine.h"
#include "handlers.h"
#include "log.h"
#include "parse.h"
#include "reply.h"
#include "request.h"
#include "server.h"
#include "sftp.h"

#define VENDOR_NAME "uring-sftp-server project"

/* ---- space-available ----------------------------------------------- */

/* bytes on device, unused bytes on device, bytes available to the user,
 * unused bytes available to the user, bytes per allocation unit.  statvfs
 * knows no per-user total (quotas are not looked at), so the user's total
 * is the device's; what the user may still use is f_bavail, the blocks
 * left to non-root users.  An allocation unit past 32 bits is sent as 0,
 * "unknown". */
int process_extended_space_available(struct request *req)
{
	struct wbuf *w = &req->reply;
	struct statvfs st;
	uint64_t unit;
	char *path;
	int rc;

	if ((rc = get_path(req, "process_extended_space_available", &path)) !=
	    0)
		return rc;
	debug3("request %u: space-available", req->id);
	logit("space-available \"%s\"", path);
	/* Confined: from the directory's descriptor, as statvfs does. */
	if ((confine_active() ? confine_statvfs(path, &st)
	                      : statvfs(path, &st)) != 0) {
		send_errno(req);
		free(path);
		return HANDLER_DONE;
	}
	free(path);
	unit = st.f_frsize != 0 ? st.f_frsize : st.f_bsize;
	reply_begin(req, SSH2_FXP_EXTENDED_REPLY);
	rc = wbuf_put_u64(w, (uint64_t)st.f_blocks * unit);
	if (rc == BUF_OK)
		rc = wbuf_put_u64(w, (uint64_t)st.f_bfree * unit);
	if (rc == BUF_OK)
		rc = wbuf_put_u64(w, (uint64_t)st.f_blocks * unit);
	if (rc == BUF_OK)
		rc = wbuf_put_u64(w, (uint64_t)st.f_bavail * unit);
	if (rc == BUF_OK)
		rc = wbuf_put_u32(w, unit > UINT32_MAX ? 0 : (uint32_t)unit);
	if (rc != BUF_OK)
		fatal_exit(255, "space-available: encode failed");
	reply_end(req);
	return HANDLER_DONE;
}

/* ---- vendor-id ----------------------------------------------------- */

/* The build number: the version's numbers as one (0.1.0 is 100, 1.2.3 is
 * 10203), so that it grows with every release. */
static uint64_t build_number(void)
{
	const char *p = PACKAGE_VERSION;
	uint64_t n = 0;
	int parts = 0;
	char *end;

	while (parts < 3) {
		n = n * 100 + strtoull(p, &end, 10);
		parts++;
		if (*end != '.')
			break;
		p = end + 1;
	}
	while (parts++ < 3)
		n *= 100;
	return n;
}

int put_vendor_id(struct wbuf *w)
{
	struct wbuf data;
	int rc;

	wbuf_init(&data, 1024);
	rc = wbuf_put_cstring(&data, VENDOR_NAME);
	if (rc == BUF_OK)
		rc = wbuf_put_cstring(&data, PACKAGE_NAME);
	if (rc == BUF_OK)
		rc = wbuf_put_cstring(&data, PACKAGE_VERSION);
	if (rc == BUF_OK)
		rc = wbuf_put_u64(&data, build_number());
	if (rc == BUF_OK)
		rc = wbuf_put_string(w, data.data, data.len);
	wbuf_free(&data);
	return rc;
}

/* The client's own vendor-id: vendor, product, version, build number.
 * Logged; WinSCP's also tells us how it reads check-file replies.  It
 * asks for nothing, so a malformed one is answered SSH2_FX_BAD_MESSAGE
 * and the session goes on: ending it (as a malformed OPEN or READ does,
 * after OpenSSH) would punish a client for a courtesy. */
int process_extended_vendor_id(struct request *req)
{
	char *vendor = NULL, *product = NULL, *version = NULL;
	uint64_t build;
	int rc;

	rc = rbuf_get_cstring(&req->body, &vendor);
	if (rc == BUF_OK)
		rc = rbuf_get_cstring(&req->body, &product);
	if (rc == BUF_OK)
		rc = rbuf_get_cstring(&req->body, &version);
	if (rc == BUF_OK)
		rc = rbuf_get_u64(&req->body, &build);
	if (rc != BUF_OK) {
		error("request %u: vendor-id: %s; answered \"Bad message\"",
		      req->id,
		      field_error(&req->body, rc, version != NULL ? 0 : 1));
		free(vendor);
		free(product);
		free(version);
		send_status(req, SSH2_FX_BAD_MESSAGE);
		return HANDLER_DONE;
	}
	verbose("vendor-id: client \"%s\" version \"%s\" build %llu by \"%s\"",
	        product, version, (unsigned long long)build, vendor);
	if (strcasecmp(product, "WinSCP") == 0)
		srv.client_reads_no_name = 1;
	send_status(req, SSH2_FX_OK);
	free(vendor);
	free(product);
	free(version);
	return HANDLER_DONE;
}
