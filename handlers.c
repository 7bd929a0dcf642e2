/* SPDX-License-Identifier: ISC
 * Copyright (c) 2026 The uring-sftp-server developers.  See LICENSE. */
/* The request table and dispatch: INIT, the before-init rule, extension
 * look-up and the -R/-P/-p filter, as OpenSSH's process() does them. */
#include "config.h"

#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "confine.h"
#include "handle.h"
#include "handlers.h"
#include "hash.h"
#include "log.h"
#include "options.h"
#include "parse.h"
#include "reply.h"
#include "server.h"
#include "sftp.h"

struct server srv;

/* The trailing arguments are more of the row's fields: ORDERED() for
 * requests that are no barrier (order.h). */
#define HANDLER(t, n, w, io, f, ...)                                           \
	{                                                                      \
		.name = n, .type = t, .does_write = w, .is_io = io, .fn = f,   \
		__VA_ARGS__                                                    \
	}
#define EXTENSION(e, v, n, w, f, ...)                                          \
	{                                                                      \
		.name = n, .ext_name = e, .ext_version = v, .does_write = w,   \
		.fn = f, __VA_ARGS__                                           \
	}
/* Rows whose paths are not all PATH_FOLLOW (see enum path_use). */
#define HANDLER_PATHS(t, n, w, f, p1, p2, ...)                                 \
	{                                                                      \
		.name = n, .type = t, .does_write = w, .fn = f,                \
		.path_use = {p1, p2}, __VA_ARGS__                              \
	}
#define EXTENSION_PATHS(e, v, n, w, f, p1, p2, ...)                            \
	{                                                                      \
		.name = n, .ext_name = e, .ext_version = v, .does_write = w,   \
		.fn = f, .path_use = {p1, p2}, __VA_ARGS__                     \
	}
/* Its class under the ordering rule (order.h); whether its first field
 * is a handle (HANDLE_ARG, else 0) and whether it reports free space
 * (COUNTS_SPACE); and its fields after an extension's
 * name (s a string, u a uint32, a attributes), which a worker thread may
 * run it with once they are seen to be well formed (the handler then
 * cannot fail to parse). */
#define ORDERED(cls, args, sh) .order = cls, .scope_args = args, .shape = sh
#define HANDLE_ARG 1
#define COUNTS_SPACE 2
/* Its one system call can go to the ring: the io_opcode (backend.h). */
#define RING_CALL(op) .has_ring_op = 1, .ring_op = op
/* Runs in steps beside READs and WRITEs (check-file); reads only. */
#define STEPPED_EXTENSION(e, v, n, f)                                          \
	{                                                                      \
		.name = n, .ext_name = e, .ext_version = v, .is_io = 1,        \
		.fn = f                                                        \
	}
/* VERSION data written by d (not a plain string). */
#define EXTENSION_DATA(e, n, w, f, d)                                          \
	{                                                                      \
		.name = n, .ext_name = e, .does_write = w, .fn = f,            \
		.ext_data = d                                                  \
	}

/* Plain requests, in OpenSSH's order (also the -Q requests order).  OPEN
 * is not marked as writing: it checks read-only mode itself, by flags. */
static const struct handler plain_handlers[] = {
    /* OPEN's class is ORDER_PATH_WRITE when it writes, creates or
     * truncates (request_scope). */
    HANDLER(SSH2_FXP_OPEN, "open", 0, 0, process_open,
            ORDERED(ORDER_PATH_READ, 0, "sua")),
    HANDLER(SSH2_FXP_CLOSE, "close", 0, 0, process_close,
            ORDERED(ORDER_HANDLE_READ, HANDLE_ARG, NULL)),
    HANDLER(SSH2_FXP_READ, "read", 0, 1, process_read),
    HANDLER(SSH2_FXP_WRITE, "write", 1, 1, process_write),
    HANDLER_PATHS(SSH2_FXP_LSTAT, "lstat", 0, process_lstat, PATH_NOFOLLOW,
                  PATH_FOLLOW, ORDERED(ORDER_PATH_READ, 0, "s"),
                  RING_CALL(IO_STATX)),
    HANDLER(SSH2_FXP_FSTAT, "fstat", 0, 0, process_fstat,
            ORDERED(ORDER_HANDLE_READ, HANDLE_ARG, "s"), RING_CALL(IO_STATX)),
    HANDLER(SSH2_FXP_SETSTAT, "setstat", 1, 0, process_setstat,
            ORDERED(ORDER_PATH_WRITE, 0, "sa")),
    HANDLER(SSH2_FXP_FSETSTAT, "fsetstat", 1, 0, process_fsetstat,
            ORDERED(ORDER_HANDLE_WRITE, HANDLE_ARG, "sa")),
    HANDLER(SSH2_FXP_OPENDIR, "opendir", 0, 0, process_opendir,
            ORDERED(ORDER_PATH_READ, 0, "s")),
    /* READDIR moves its handle on: two on one handle are in order.  It
     * reports on the directory's files: a survey. */
    HANDLER(SSH2_FXP_READDIR, "readdir", 0, 0, process_readdir,
            ORDERED(ORDER_HANDLE_SURVEY, HANDLE_ARG, "s")),
    HANDLER_PATHS(SSH2_FXP_REMOVE, "remove", 1, process_remove, PATH_NOFOLLOW,
                  PATH_FOLLOW, ORDERED(ORDER_PATH_WRITE, 0, "s"),
                  RING_CALL(IO_UNLINKAT)),
    HANDLER_PATHS(SSH2_FXP_MKDIR, "mkdir", 1, process_mkdir, PATH_NOFOLLOW,
                  PATH_FOLLOW, ORDERED(ORDER_PATH_WRITE, 0, "sa"),
                  RING_CALL(IO_MKDIRAT)),
    HANDLER_PATHS(SSH2_FXP_RMDIR, "rmdir", 1, process_rmdir, PATH_NOFOLLOW,
                  PATH_FOLLOW, ORDERED(ORDER_PATH_WRITE, 0, "s"),
                  RING_CALL(IO_UNLINKAT)),
    HANDLER_PATHS(SSH2_FXP_REALPATH, "realpath", 0, process_realpath,
                  PATH_NOT_RESOLVED, PATH_FOLLOW,
                  ORDERED(ORDER_PATH_READ, 0, "s")),
    HANDLER(SSH2_FXP_STAT, "stat", 0, 0, process_stat,
            ORDERED(ORDER_PATH_READ, 0, "s"), RING_CALL(IO_STATX)),
    HANDLER_PATHS(SSH2_FXP_RENAME, "rename", 1, process_rename, PATH_NOFOLLOW,
                  PATH_NOFOLLOW, ORDERED(ORDER_PATH_WRITE, 0, "ss")),
    HANDLER_PATHS(SSH2_FXP_READLINK, "readlink", 0, process_readlink,
                  PATH_NOFOLLOW, PATH_FOLLOW, ORDERED(ORDER_PATH_READ, 0, "s")),
    HANDLER_PATHS(SSH2_FXP_SYMLINK, "symlink", 1, process_symlink,
                  PATH_NOT_RESOLVED, PATH_NOFOLLOW,
                  ORDERED(ORDER_PATH_WRITE, 0, "ss"), RING_CALL(IO_SYMLINKAT)),
};

/* Extensions, in the order VERSION advertises them. */
static const struct handler ext_handlers[] = {
    EXTENSION_PATHS("posix-rename@openssh.com", "1", "posix-rename", 1,
                    process_extended_posix_rename, PATH_NOFOLLOW, PATH_NOFOLLOW,
                    ORDERED(ORDER_PATH_WRITE, 0, "ss"), RING_CALL(IO_RENAMEAT)),
    EXTENSION("statvfs@openssh.com", "2", "statvfs", 0,
              process_extended_statvfs,
              ORDERED(ORDER_PATH_READ, COUNTS_SPACE, "s")),
    EXTENSION("fstatvfs@openssh.com", "2", "fstatvfs", 0,
              process_extended_fstatvfs,
              ORDERED(ORDER_HANDLE_SURVEY, HANDLE_ARG | COUNTS_SPACE, "s")),
    EXTENSION_PATHS("hardlink@openssh.com", "1", "hardlink", 1,
                    process_extended_hardlink, PATH_NOFOLLOW, PATH_NOFOLLOW,
                    ORDERED(ORDER_PATH_WRITE, 0, "ss"), RING_CALL(IO_LINKAT)),
    EXTENSION("fsync@openssh.com", "1", "fsync", 1, process_extended_fsync,
              ORDERED(ORDER_HANDLE_READ, HANDLE_ARG, NULL)),
    EXTENSION_PATHS("lsetstat@openssh.com", "1", "lsetstat", 1,
                    process_extended_lsetstat, PATH_NOFOLLOW, PATH_FOLLOW,
                    ORDERED(ORDER_PATH_WRITE, 0, "sa")),
    EXTENSION("limits@openssh.com", "1", "limits", 0, process_extended_limits),
    EXTENSION_PATHS("expand-path@openssh.com", "1", "expand-path", 0,
                    process_extended_expand, PATH_NOT_RESOLVED, PATH_FOLLOW),
    EXTENSION("copy-data", "1", "copy-data", 1, process_extended_copy_data),
    EXTENSION_PATHS("home-directory", "1", "home-directory", 0,
                    process_extended_home_directory, PATH_NOT_RESOLVED,
                    PATH_FOLLOW),
    EXTENSION("users-groups-by-id@openssh.com", "1", "users-groups-by-id", 0,
              process_extended_get_users_groups_by_id),
    /* Beyond OpenSSH (doc/design.md): the draft's checksums, paramiko's
     * form of them, server-side copy and WinSCP's extras. */
    STEPPED_EXTENSION("check-file-name", HASH_NAMES, "check-file-name",
                      process_extended_check_file_name),
    STEPPED_EXTENSION("check-file-handle", HASH_NAMES, "check-file-handle",
                      process_extended_check_file_handle),
    STEPPED_EXTENSION("check-file", HASH_NAMES, "check-file",
                      process_extended_check_file),
    EXTENSION("copy-file", "1", "copy-file", 1, process_extended_copy_file),
    EXTENSION("space-available", "1", "space-available", 0,
              process_extended_space_available),
    EXTENSION_DATA("vendor-id", "vendor-id", 0, process_extended_vendor_id,
                   put_vendor_id),
};

#define NELEM(a) (sizeof(a) / sizeof((a)[0]))

const struct handler *handler_for_type(uint8_t type)
{
	size_t i;

	for (i = 0; i < NELEM(plain_handlers); i++)
		if (plain_handlers[i].type == type)
			return &plain_handlers[i];
	return NULL;
}

const struct handler *handler_for_extension(const uint8_t *name, size_t len)
{
	size_t i;

	for (i = 0; i < NELEM(ext_handlers); i++)
		if (strlen(ext_handlers[i].ext_name) == len &&
		    memcmp(ext_handlers[i].ext_name, name, len) == 0)
			return &ext_handlers[i];
	return NULL;
}

static void set_handler(struct request *req, const struct handler *h)
{
	req->handler = h;
	req->path_use[0] = h != NULL ? h->path_use[0] : PATH_FOLLOW;
	req->path_use[1] = h != NULL ? h->path_use[1] : PATH_FOLLOW;
}

/* match_list looks at no more than this many names of a list. */
#define NAME_LIST_MAX 40

int name_in_list(const char *name, const char *list)
{
	size_t name_len;
	int items;

	if (name == NULL || list == NULL || *name == '\0')
		return 0;
	name_len = strlen(name);

	for (items = 0; items < NAME_LIST_MAX; items++) {
		const char *comma = strchr(list, ',');
		size_t item_len = comma ? (size_t)(comma - list) : strlen(list);

		/* match_list ends the list at the first empty item. */
		if (item_len == 0)
			return 0;
		if (item_len == name_len && memcmp(list, name, name_len) == 0)
			return 1;
		if (comma == NULL)
			return 0;
		list = comma + 1;
	}
	return 0;
}

int request_permitted(const struct handler *h)
{
	const struct options *o = &srv.opt;

	if (o->readonly && h->does_write) {
		verbose("Refusing %s request in read-only mode", h->name);
		return 0;
	}
	if (o->denied != NULL && name_in_list(h->name, o->denied)) {
		verbose("Refusing denylisted %s request", h->name);
		return 0;
	}
	if (o->allowed != NULL) {
		if (name_in_list(h->name, o->allowed)) {
			debug2("Permitting allowlisted %s request", h->name);
			return 1;
		}
		verbose("Refusing non-allowlisted %s request", h->name);
		return 0;
	}
	return 1;
}

void print_request_names(FILE *f)
{
	size_t i;

	for (i = 0; i < NELEM(plain_handlers); i++)
		fprintf(f, "%s\n", plain_handlers[i].name);
	for (i = 0; i < NELEM(ext_handlers); i++)
		fprintf(f, "%s\n", ext_handlers[i].name);
}

int compose_extensions(struct wbuf *w)
{
	const struct handler *h;
	size_t i;
	int rc;

	for (i = 0; i < NELEM(ext_handlers); i++) {
		h = &ext_handlers[i];
		if (!request_permitted(h)) {
			debug2("compose_extension: refusing to advertise "
			       "disallowed extension %s",
			       h->ext_name);
			continue;
		}
		if ((rc = wbuf_put_cstring(w, h->ext_name)) != BUF_OK)
			return rc;
		rc = h->ext_data != NULL ? h->ext_data(w)
		                         : wbuf_put_cstring(w, h->ext_version);
		if (rc != BUF_OK)
			return rc;
	}
	return BUF_OK;
}

/* An EXTENDED request's row, from its packet (id, then the name) and not
 * from req->body, which its handler may have read already.  NULL when the
 * name is unknown or cut short. */
static const struct handler *peek_extension(const struct request *req)
{
	const uint8_t *name;
	struct rbuf r;
	size_t len;

	rbuf_init(&r, req->packet + 1, req->packet_len - 1);
	if (rbuf_skip(&r, 4) != BUF_OK ||
	    rbuf_get_string(&r, &name, &len) != BUF_OK)
		return NULL;
	return handler_for_extension(name, len);
}

void request_classify(struct request *req)
{
	set_handler(req, req->type == SSH2_FXP_EXTENDED
	                     ? peek_extension(req)
	                     : handler_for_type(req->type));
}

int request_is_io(const struct request *req)
{
	return req->handler != NULL && req->handler->is_io;
}

/* The request's fields after its id (and an extension's name). */
static int fields_of(const struct request *req, struct rbuf *r)
{
	const uint8_t *name;
	size_t len;

	rbuf_init(r, req->packet + 1, req->packet_len - 1);
	if (rbuf_skip(r, 4) != BUF_OK)
		return -1;
	if (req->type == SSH2_FXP_EXTENDED &&
	    rbuf_get_string(r, &name, &len) != BUF_OK)
		return -1;
	return 0;
}

int request_ring_op(const struct request *req)
{
	const struct handler *h = req->handler;

	if (h == NULL || !h->has_ring_op)
		return -1;
	/* A path under --confine is resolved call by call (confine.c); a
	 * handle's descriptor is not. */
	if (confine_active() && h->scope_args != HANDLE_ARG)
		return -1;
	if (h->ring_op == IO_MKDIRAT && !upload_mkdir_one_call())
		return -1;
	return h->ring_op;
}

int request_timed(const struct request *req)
{
	return req->type != SSH2_FXP_READDIR && request_offloadable(req);
}

int request_offloadable(const struct request *req)
{
	struct rbuf r;

	/* Before INIT every request ends the session (request_start). */
	return srv.init_done && req->handler != NULL &&
	       req->handler->shape != NULL && fields_of(req, &r) == 0 &&
	       fields_well_formed(r, req->handler->shape);
}

/* OPEN changes paths when it may write, create or truncate. */
static int open_writes(struct rbuf r)
{
	const uint8_t *p;
	uint32_t pflags;
	size_t len;

	return rbuf_get_string(&r, &p, &len) != BUF_OK ||
	       rbuf_get_u32(&r, &pflags) != BUF_OK ||
	       (pflags & (SSH2_FXF_WRITE | SSH2_FXF_CREAT | SSH2_FXF_TRUNC |
	                  SSH2_FXF_APPEND)) != 0;
}

void request_io_prescope(struct request *req)
{
	struct order_scope *s = &req->scope;
	const struct handle *hd;
	struct rbuf r;
	int idx;

	memset(s, 0, sizeof(*s));
	s->cls = ORDER_IO;
	s->handle = -1;
	s->range_unknown = 1;
	if (fields_of(req, &r) != 0 || handle_parse(&r, &idx) != BUF_OK)
		return;
	if ((hd = handle_get(idx, HANDLE_UNUSED)) == NULL) {
		s->handle = idx;
		s->handle_unknown = 1;
		return;
	}
	/* Its file; the byte range comes once the handler ran. */
	s->has_file = 1;
	s->dev = hd->dev;
	s->ino = hd->ino;
}

int request_read_range(const struct request *req, int *idx, uint64_t *off,
                       uint32_t *len)
{
	struct rbuf r;

	return req->type == SSH2_FXP_READ && fields_of(req, &r) == 0 &&
	               handle_parse(&r, idx) == BUF_OK &&
	               rbuf_get_u64(&r, off) == BUF_OK &&
	               rbuf_get_u32(&r, len) == BUF_OK
	           ? 0
	           : -1;
}

void request_scope(struct request *req)
{
	const struct handler *h = req->handler;
	struct order_scope *s = &req->scope;
	const struct handle *hd;
	struct rbuf r;
	int idx;

	memset(s, 0, sizeof(*s));
	s->handle = -1;
	if (h == NULL || h->order == ORDER_BARRIER || fields_of(req, &r) != 0)
		return;
	s->cls = (enum order_class)h->order;
	s->opens_handle =
	    req->type == SSH2_FXP_OPEN || req->type == SSH2_FXP_OPENDIR;
	if (req->type == SSH2_FXP_OPEN && open_writes(r))
		s->cls = ORDER_PATH_WRITE;
	s->closes = req->type == SSH2_FXP_CLOSE;
	s->counts_space = (h->scope_args & COUNTS_SPACE) != 0;
	if (!(h->scope_args & HANDLE_ARG))
		return;
	if (handle_parse(&r, &idx) != BUF_OK) {
		s->cls = ORDER_BARRIER;
		return;
	}
	s->handle = idx;
	/* No such handle: nothing to order it by but its number. */
	if ((hd = handle_get(idx, HANDLE_UNUSED)) == NULL) {
		s->handle_unknown = 1;
		return;
	}
	s->has_file = hd->kind == HANDLE_FILE;
	s->dev = hd->dev;
	s->ino = hd->ino;
	/* An atomic upload's CLOSE puts the file under its name. */
	if (req->type == SSH2_FXP_CLOSE && s->has_file &&
	    upload_names_file(hd->upload))
		s->cls = ORDER_PATH_WRITE;
}

/* VERSION has no request id; it carries our version and extensions. */
static int process_init(struct request *req)
{
	struct wbuf *w = &req->reply;
	uint32_t version;

	if (get_u32(req, "process_init", &version) != 0)
		return HANDLER_PARSE_ERROR;
	verbose("received client version %u", version);
	srv.client_version = version;
	wbuf_reset(w);
	if (wbuf_put_u32(w, 0) != BUF_OK ||
	    wbuf_put_u8(w, SSH2_FXP_VERSION) != BUF_OK ||
	    wbuf_put_u32(w, SFTP_VERSION) != BUF_OK ||
	    compose_extensions(w) != BUF_OK ||
	    wbuf_poke_u32(w, 0, w->len - 4) != BUF_OK)
		fatal_exit(255, "process_init: compose failed");
	srv.init_done = 1;
	return HANDLER_DONE;
}

/* A path refused by --confine was answered where it was read. */
static int run_handler(const struct handler *h, struct request *req)
{
	int rc = h->fn(req);

	return rc == HANDLER_REFUSED ? HANDLER_DONE : rc;
}

static int process_extended(struct request *req)
{
	const struct handler *h;
	char *name;

	if (get_string(req, "process_extended", &name) != 0)
		return HANDLER_PARSE_ERROR;
	/* request_classify found the row from the packet's name; a name
	 * ending in one NUL is found only here, where that NUL is dropped. */
	h = req->handler != NULL
	        ? req->handler
	        : handler_for_extension((const uint8_t *)name, strlen(name));
	if (h == NULL)
		error("Unknown extended request \"%.100s\"", name);
	free(name);
	set_handler(req, h);
	if (h == NULL) {
		send_status(req, SSH2_FX_OP_UNSUPPORTED);
		return HANDLER_DONE;
	}
	if (!request_permitted(h)) {
		send_status(req, SSH2_FX_PERMISSION_DENIED);
		return HANDLER_DONE;
	}
	return run_handler(h, req);
}

int request_start(struct request *req)
{
	const struct handler *h;

	if (req->type == SSH2_FXP_INIT)
		return process_init(req);
	if (!srv.init_done) {
		if (req->type == SSH2_FXP_EXTENDED)
			snprintf(req->fatal, sizeof(req->fatal),
			         "Received extended request before init");
		else
			snprintf(req->fatal, sizeof(req->fatal),
			         "Received %u request before init", req->type);
		return HANDLER_PARSE_ERROR;
	}
	/* Every request but INIT starts with its id, unknown types too. */
	if (rbuf_get_u32(&req->body, &req->id) != BUF_OK) {
		snprintf(req->fatal, sizeof(req->fatal),
		         "process: parse%s ID: incomplete message",
		         req->type == SSH2_FXP_EXTENDED ? " extended" : "");
		return HANDLER_PARSE_ERROR;
	}
	h = req->handler;
	if (h == NULL && req->type != SSH2_FXP_EXTENDED) {
		/* OpenSSH answers nothing here; neither do we. */
		error("Unknown message %u", req->type);
		wbuf_reset(&req->reply);
		return HANDLER_DONE;
	}
	if (req->type == SSH2_FXP_EXTENDED)
		return process_extended(req);
	if (!request_permitted(h)) {
		send_status(req, SSH2_FX_PERMISSION_DENIED);
		return HANDLER_DONE;
	}
	return run_handler(h, req);
}
