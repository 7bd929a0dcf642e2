/* SPDX-License-Identifier: ISC
 * Copyright (c) 2026 The uring-sftp-server developers.  See LICENSE. */
/* The request table: one row per request type and per extension, with its
 * -P/-p name and whether -R refuses it.  It drives dispatch, -Q requests,
 * the request filters and the VERSION extension list. */
#ifndef HANDLERS_H
#define HANDLERS_H

#include <stdint.h>
#include <stdio.h>

#include "buf.h"
#include "order.h"
#include "request.h"
#include "setstat.h" /* setstat_request */
#include "upload.h"  /* open_file */

typedef int (*handler_fn)(struct request *req);

struct handler {
	const char *name;     /* short name for -P, -p and -Q requests */
	const char *ext_name; /* EXTENDED request name; NULL for plain types */
	const char *ext_version; /* advertised version string */
	uint8_t type;            /* SSH2_FXP_*; 0 for extensions */
	int does_write;          /* refused by -R */
	int is_io; /* READ/WRITE: runs concurrently via the queue */
	handler_fn fn;
	uint8_t path_use[2]; /* enum path_use of the first two paths */
	/* Writes the VERSION data of an extension whose data is not a
	 * plain string (vendor-id); NULL: ext_version. */
	int (*ext_data)(struct wbuf *w);
	/* Under the ordering rule (order.h): its class (0: a barrier),
	 * whether its first field is a handle (bit 1) and whether it
	 * reports free space (bit 2, order_scope.counts_space), and the
	 * shape of its fields when a worker thread may run it (NULL: the
	 * loop does). */
	uint8_t order;
	uint8_t scope_args;
	const char *shape;
	/* Its handler can make its one system call through the ring
	 * (req->via_ring): has_ring_op, and ring_op that call's enum
	 * io_opcode (backend.h). */
	uint8_t has_ring_op;
	uint8_t ring_op;
};

/* Run one request: INIT, the before-init check, EXTENDED name look-up,
 * the request filters, then its handler.  Returns HANDLER_*. */
int request_start(struct request *req);
/* READ and WRITE may run concurrently; every other request is a barrier. */
int request_is_io(const struct request *req);
/* Its fields are well formed and a worker thread may run its handler. */
int request_offloadable(const struct request *req);
/* The metadata opcode (backend.h) of the one system call its handler
 * would give the ring (req->via_ring), or -1 when it has none or makes
 * more calls here: a path under --confine (resolved call by call,
 * confine.c), MKDIR with -M (upload.c). */
int request_ring_op(const struct request *req);
/* Does its run in the loop say how slow the storage is (latency.h)?  Not
 * a READDIR's: many lookups, the first of which listing.c times. */
int request_timed(const struct request *req);
/* Fill req->scope (order.h) from the request and the handle table, right
 * before it starts: its class, its handle and that handle's file. */
void request_scope(struct request *req);
/* Before a READ or WRITE runs its handler: whether its handle is open at
 * all (one that is not may be what an OPEN still running will make). */
void request_io_prescope(struct request *req);
/* Find the request's row once, when it is admitted: req->handler (for an
 * EXTENDED request, from the name in its packet; NULL when unknown) and
 * req->path_use.  request_start and the queue's questions use it. */
void request_classify(struct request *req);

/* Look-ups; NULL when unknown. */
const struct handler *handler_for_type(uint8_t type);
const struct handler *handler_for_extension(const uint8_t *name, size_t len);

/* OpenSSH's request_permitted(): -R, then -P, then -p, with its log lines. */
int request_permitted(const struct handler *h);
/* OpenSSH's match_list of the short names: exact, case-sensitive,
 * comma-separated.  Returns 1 if name is in list. */
int name_in_list(const char *name, const char *list);

/* -Q requests: every short name, plain types first, one per line. */
void print_request_names(FILE *f);

/* Append the VERSION extension pairs, leaving out refused ones. */
int compose_extensions(struct wbuf *w);

/* The whole of SETSTAT (SETSTAT_PATH) or lsetstat (SETSTAT_NOFOLLOW); fn
 * names OpenSSH's function for a parse error. */
int setstat_request(struct request *req, const char *fn, enum setstat_target t);

/* SYMLINK, posix-rename and hardlink: two paths, logged as OpenSSH logs
 * them ("<op> old ... new ..."), answered with one call's result. */
int path_pair_request(struct request *req, const char *fn, const char *op,
                      int (*call)(const char *, const char *), int ring_op);

/* Handlers by module. */
int process_open(struct request *req);
int process_close(struct request *req);
int process_read(struct request *req);
/* waiting, a READ, waits for READ memory: the READs not yet running, it
 * and those the client sent after it, get read-ahead hints for their
 * ranges where they continue their file's sequential stream, so that the
 * device sees the client's depth (readahead.h).  1 when some READ was
 * left to be asked again on a later turn; 0 when every one it saw is
 * hinted or needs none, so that until more requests arrive another walk
 * would find nothing to do. */
int read_hint_waiting(struct request *waiting);
int process_write(struct request *req);
int process_fstat(struct request *req);
int process_fsetstat(struct request *req);
int process_opendir(struct request *req);
int process_readdir(struct request *req);

int process_lstat(struct request *req);
int process_stat(struct request *req);
int process_setstat(struct request *req);
int process_remove(struct request *req);
int process_mkdir(struct request *req);
int process_rmdir(struct request *req);
int process_realpath(struct request *req);
int process_rename(struct request *req);
int process_readlink(struct request *req);
int process_symlink(struct request *req);

int process_extended_posix_rename(struct request *req);
int process_extended_statvfs(struct request *req);
int process_extended_fstatvfs(struct request *req);
int process_extended_hardlink(struct request *req);
int process_extended_fsync(struct request *req);
int process_extended_lsetstat(struct request *req);
int process_extended_limits(struct request *req);
int process_extended_expand(struct request *req);
int process_extended_copy_data(struct request *req);
int process_extended_home_directory(struct request *req);
int process_extended_get_users_groups_by_id(struct request *req);
/* check-file-name, check-file-handle (draft-ietf-secsh-filexfer-
 * extensions-00, "Checking File Contents") and paramiko's check-file, in
 * checksum.c: the hash of a byte range, or one per block, computed in steps
 * through the I/O back end. */
int process_extended_check_file_name(struct request *req);
int process_extended_check_file_handle(struct request *req);
int process_extended_check_file(struct request *req);
int process_extended_copy_file(struct request *req);
int process_extended_space_available(struct request *req);
int process_extended_vendor_id(struct request *req);
/* vendor-id's data in VERSION: vendor, product, version, build number. */
int put_vendor_id(struct wbuf *w);

#endif
