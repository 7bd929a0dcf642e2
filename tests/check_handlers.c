/* SPDX-License-Identifier: ISC
 * Copyright (c) 2026 The uring-sftp-server developers.  See LICENSE. */
/* Unit tests of the request table: dispatch, -R, -P, -p, the VERSION
 * extension list and the before-init rule. */
#include "config.h"

#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "handlers.h"
#include "log.h"
#include "queue.h"
#include "server.h"
#include "sftp.h"

static void reset_server(void)
{
	memset(&srv, 0, sizeof(srv));
	srv.client_version = 3;
	srv.user = "tester";
	srv.client_addr = "UNKNOWN";
	log_init("check_handlers", LOG_LEVEL_QUIET, 0, 1);
}

/* A request from a type and body. */
static struct request *make_request(uint8_t type, const void *body, size_t len)
{
	uint8_t packet[512];
	struct request *req;

	packet[0] = type;
	memcpy(packet + 1, body, len);
	req = request_new(packet, len + 1, 4096, NULL);
	ck_assert_ptr_nonnull(req);
	/* As queue_admit does. */
	request_classify(req);
	return req;
}

/* Status code of a STATUS reply, or -1 for another reply type. */
static int reply_status(const struct request *req)
{
	if (req->reply.len < 13 || req->reply.data[4] != SSH2_FXP_STATUS)
		return -1;
	return (int)peek_u32(req->reply.data + 9);
}

static const struct handler *ext(const char *name)
{
	return handler_for_extension((const uint8_t *)name, strlen(name));
}

START_TEST(test_table_lookups)
{
	ck_assert_str_eq(handler_for_type(SSH2_FXP_OPEN)->name, "open");
	ck_assert_str_eq(handler_for_type(SSH2_FXP_SYMLINK)->name, "symlink");
	ck_assert_ptr_null(handler_for_type(SSH2_FXP_INIT));
	ck_assert_ptr_null(handler_for_type(SSH2_FXP_EXTENDED));
	ck_assert_ptr_null(handler_for_type(99));
	ck_assert_str_eq(ext("copy-data")->name, "copy-data");
	ck_assert_str_eq(ext("posix-rename@openssh.com")->name, "posix-rename");
	ck_assert_ptr_null(ext("posix-rename"));
	ck_assert_ptr_null(ext("md5-hash"));
	ck_assert_ptr_null(ext("check-file-NAME"));
	ck_assert(handler_for_type(SSH2_FXP_READ)->is_io);
	/* Beyond OpenSSH: the checksums run in steps beside READ and WRITE
	 * and do not write; copy-file writes. */
	ck_assert(ext("check-file-name")->is_io);
	ck_assert(ext("check-file-handle")->is_io);
	ck_assert(ext("check-file")->is_io);
	ck_assert(!ext("check-file")->does_write);
	ck_assert(ext("copy-file")->does_write);
	ck_assert(!ext("copy-file")->is_io);
	ck_assert(!ext("space-available")->does_write);
	ck_assert(handler_for_type(SSH2_FXP_WRITE)->is_io);
	ck_assert(!handler_for_type(SSH2_FXP_CLOSE)->is_io);
}
END_TEST

START_TEST(test_readonly_refuses_writers)
{
	static const char *writers[] = {"write",  "setstat", "fsetstat",
	                                "remove", "mkdir",   "rmdir",
	                                "rename", "symlink"};
	static const char *ext_writers[] = {"posix-rename@openssh.com",
	                                    "hardlink@openssh.com",
	                                    "fsync@openssh.com",
	                                    "lsetstat@openssh.com",
	                                    "copy-data",
	                                    "copy-file"};
	int type, refused = 0;
	size_t i;

	reset_server();
	srv.opt.readonly = 1;
	for (type = 0; type < 256; type++) {
		const struct handler *h = handler_for_type((uint8_t)type);

		if (h != NULL && !request_permitted(h))
			refused++;
	}
	ck_assert_int_eq(refused, 8);
	for (i = 0; i < sizeof(writers) / sizeof(writers[0]); i++) {
		int found = 0;

		for (type = 0; type < 256; type++) {
			const struct handler *h =
			    handler_for_type((uint8_t)type);
			if (h != NULL && strcmp(h->name, writers[i]) == 0)
				found = !request_permitted(h);
		}
		ck_assert_msg(found, "%s not refused", writers[i]);
	}
	for (i = 0; i < sizeof(ext_writers) / sizeof(ext_writers[0]); i++)
		ck_assert(!request_permitted(ext(ext_writers[i])));
	ck_assert(request_permitted(ext("statvfs@openssh.com")));
	ck_assert(request_permitted(handler_for_type(SSH2_FXP_OPEN)));
}
END_TEST

START_TEST(test_deny_and_allow_lists)
{
	reset_server();
	srv.opt.denied = "read,fsync";
	ck_assert(!request_permitted(handler_for_type(SSH2_FXP_READ)));
	ck_assert(request_permitted(handler_for_type(SSH2_FXP_WRITE)));
	ck_assert(!request_permitted(ext("fsync@openssh.com")));
	srv.opt.denied = NULL;
	srv.opt.allowed = "realpath,stat,limits";
	ck_assert(request_permitted(handler_for_type(SSH2_FXP_REALPATH)));
	ck_assert(request_permitted(ext("limits@openssh.com")));
	ck_assert(!request_permitted(handler_for_type(SSH2_FXP_LSTAT)));
	/* Names are exact and case-sensitive. */
	srv.opt.allowed = "Stat";
	ck_assert(!request_permitted(handler_for_type(SSH2_FXP_STAT)));
	/* Deny wins over allow. */
	srv.opt.allowed = "stat";
	srv.opt.denied = "stat";
	ck_assert(!request_permitted(handler_for_type(SSH2_FXP_STAT)));
}
END_TEST

/* The extension names of a VERSION reply built by compose_extensions, with
 * their data (vendor-id's, a structure, is shown as "{...}"). */
static char *extension_names(void)
{
	static char names[2048];
	const uint8_t *data;
	struct wbuf w;
	struct rbuf r;
	size_t len;
	char *name;

	wbuf_init(&w, 4096);
	ck_assert_int_eq(compose_extensions(&w), BUF_OK);
	rbuf_init(&r, w.data, w.len);
	names[0] = '\0';
	while (rbuf_left(&r) > 0) {
		ck_assert_int_eq(rbuf_get_cstring(&r, &name), BUF_OK);
		ck_assert_int_eq(rbuf_get_string(&r, &data, &len), BUF_OK);
		strcat(names, name);
		strcat(names, "=");
		if (strcmp(name, "vendor-id") == 0)
			strcat(names, "{...}");
		else
			strncat(names, (const char *)data, len);
		strcat(names, " ");
		free(name);
	}
	wbuf_free(&w);
	return names;
}

#define HASHES "md5,sha1,sha224,sha256,sha384,sha512,crc32"

START_TEST(test_version_extensions)
{
	reset_server();
	ck_assert_str_eq(extension_names(),
	                 "posix-rename@openssh.com=1 statvfs@openssh.com=2 "
	                 "fstatvfs@openssh.com=2 hardlink@openssh.com=1 "
	                 "fsync@openssh.com=1 lsetstat@openssh.com=1 "
	                 "limits@openssh.com=1 expand-path@openssh.com=1 "
	                 "copy-data=1 home-directory=1 "
	                 "users-groups-by-id@openssh.com=1 "
	                 "check-file-name=" HASHES " check-file-handle=" HASHES
	                 " check-file=" HASHES " copy-file=1 "
	                 "space-available=1 vendor-id={...} ");
	srv.opt.readonly = 1;
	ck_assert_str_eq(extension_names(),
	                 "statvfs@openssh.com=2 fstatvfs@openssh.com=2 "
	                 "limits@openssh.com=1 expand-path@openssh.com=1 "
	                 "home-directory=1 users-groups-by-id@openssh.com=1 "
	                 "check-file-name=" HASHES " check-file-handle=" HASHES
	                 " check-file=" HASHES " space-available=1 "
	                 "vendor-id={...} ");
	srv.opt.readonly = 0;
	srv.opt.allowed = "realpath,stat";
	ck_assert_str_eq(extension_names(), "");
}
END_TEST

START_TEST(test_before_init_is_fatal)
{
	static const uint8_t id[] = {0, 0, 0, 1, 0, 0, 0, 0};
	struct request *req;

	reset_server();
	req = make_request(SSH2_FXP_REALPATH, id, sizeof(id));
	ck_assert_int_eq(request_start(req), HANDLER_PARSE_ERROR);
	ck_assert_str_eq(req->fatal, "Received 16 request before init");
	request_free(req);
	req = make_request(SSH2_FXP_EXTENDED, id, sizeof(id));
	ck_assert_int_eq(request_start(req), HANDLER_PARSE_ERROR);
	ck_assert_str_eq(req->fatal, "Received extended request before init");
	request_free(req);
}
END_TEST

START_TEST(test_init_and_unknowns)
{
	static const uint8_t version[] = {0, 0, 0, 3};
	static const uint8_t unknown_ext[] = {0, 0, 0,   9,   0,  0,
	                                      0, 3, 'f', 'o', 'o'};
	static const uint8_t denied_read[] = {0, 0, 0, 5, 0, 0, 0, 4, 0,
	                                      0, 0, 0, 0, 0, 0, 0, 0, 0,
	                                      0, 0, 0, 0, 0, 0, 0, 0, 1};
	struct request *req;

	reset_server();
	req = make_request(SSH2_FXP_INIT, version, sizeof(version));
	ck_assert_int_eq(request_start(req), HANDLER_DONE);
	ck_assert_uint_eq(req->reply.data[4], SSH2_FXP_VERSION);
	ck_assert_uint_eq(peek_u32(req->reply.data + 5), 3);
	ck_assert_uint_eq(peek_u32(req->reply.data), req->reply.len - 4);
	ck_assert(srv.init_done);
	request_free(req);

	/* Unknown types get no reply at all, as from OpenSSH. */
	req = make_request(99, version, sizeof(version));
	ck_assert_int_eq(request_start(req), HANDLER_DONE);
	ck_assert_uint_eq(req->reply.len, 0);
	request_free(req);

	req = make_request(SSH2_FXP_EXTENDED, unknown_ext, sizeof(unknown_ext));
	ck_assert_int_eq(request_start(req), HANDLER_DONE);
	ck_assert_int_eq(reply_status(req), SSH2_FX_OP_UNSUPPORTED);
	ck_assert_uint_eq(peek_u32(req->reply.data + 5), 9);
	request_free(req);

	srv.opt.denied = "read";
	req = make_request(SSH2_FXP_READ, denied_read, sizeof(denied_read));
	ck_assert_int_eq(request_start(req), HANDLER_DONE);
	ck_assert_int_eq(reply_status(req), SSH2_FX_PERMISSION_DENIED);
	request_free(req);

	/* A body too short for its fields is a parse error. */
	srv.opt.denied = NULL;
	req = make_request(SSH2_FXP_READ, denied_read, 10);
	ck_assert_int_eq(request_start(req), HANDLER_PARSE_ERROR);
	request_free(req);
}
END_TEST

/* Every request whose fields are missing stops with OpenSSH's line for
 * it, naming OpenSSH's function: no handler leaves the line to a default
 * (the difftest compares the lines with OpenSSH's for every field). */
START_TEST(test_every_parse_error_has_its_line)
{
	static const struct {
		uint8_t type;
		const char *ext, *line;
	} cases[] = {
	    {SSH2_FXP_OPEN, NULL, "process_open: parse"},
	    {SSH2_FXP_CLOSE, NULL, "process_close: parse"},
	    {SSH2_FXP_READ, NULL, "process_read: parse"},
	    {SSH2_FXP_WRITE, NULL, "process_write: parse"},
	    {SSH2_FXP_LSTAT, NULL, "process_do_stat: parse"},
	    {SSH2_FXP_FSTAT, NULL, "process_fstat: parse"},
	    {SSH2_FXP_SETSTAT, NULL, "process_setstat: parse"},
	    {SSH2_FXP_FSETSTAT, NULL, "process_fsetstat: parse"},
	    {SSH2_FXP_OPENDIR, NULL, "process_opendir: parse"},
	    {SSH2_FXP_READDIR, NULL, "process_readdir: parse"},
	    {SSH2_FXP_REMOVE, NULL, "process_remove: parse"},
	    {SSH2_FXP_MKDIR, NULL, "process_mkdir: parse"},
	    {SSH2_FXP_RMDIR, NULL, "process_rmdir: parse"},
	    {SSH2_FXP_REALPATH, NULL, "process_realpath: parse"},
	    {SSH2_FXP_STAT, NULL, "process_do_stat: parse"},
	    {SSH2_FXP_RENAME, NULL, "process_rename: parse"},
	    {SSH2_FXP_READLINK, NULL, "process_readlink: parse"},
	    {SSH2_FXP_SYMLINK, NULL, "process_symlink: parse"},
	    {SSH2_FXP_EXTENDED, NULL, "process_extended: parse"},
	    {SSH2_FXP_EXTENDED, "posix-rename@openssh.com",
	     "process_extended_posix_rename: parse"},
	    {SSH2_FXP_EXTENDED, "statvfs@openssh.com",
	     "process_extended_statvfs: parse"},
	    {SSH2_FXP_EXTENDED, "fstatvfs@openssh.com",
	     "process_extended_fstatvfs: parse"},
	    {SSH2_FXP_EXTENDED, "hardlink@openssh.com",
	     "process_extended_hardlink: parse"},
	    {SSH2_FXP_EXTENDED, "fsync@openssh.com",
	     "process_extended_fsync: parse"},
	    {SSH2_FXP_EXTENDED, "lsetstat@openssh.com",
	     "process_extended_lsetstat: parse"},
	    {SSH2_FXP_EXTENDED, "expand-path@openssh.com",
	     "process_extended_expand: parse"},
	    {SSH2_FXP_EXTENDED, "copy-data",
	     "process_extended_copy_data: buffer error"},
	    {SSH2_FXP_EXTENDED, "home-directory",
	     "process_extended_home_directory: parse"},
	    {SSH2_FXP_EXTENDED, "users-groups-by-id@openssh.com",
	     "process_extended_get_users_groups_by_id: parse"},
	};
	char want[128];
	uint8_t body[64];
	struct request *req;
	size_t i, len;

	reset_server();
	srv.init_done = 1;
	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		poke_u32(body, 7); /* the id, and nothing else */
		len = 4;
		if (cases[i].ext != NULL) {
			poke_u32(body + 4, (uint32_t)strlen(cases[i].ext));
			memcpy(body + 8, cases[i].ext, strlen(cases[i].ext));
			len = 8 + strlen(cases[i].ext);
		}
		req = make_request(cases[i].type, body, len);
		ck_assert_int_eq(request_start(req), HANDLER_PARSE_ERROR);
		snprintf(want, sizeof(want), "%s: incomplete message",
		         cases[i].line);
		ck_assert_str_eq(req->fatal, want);
		request_free(req);
	}
}
END_TEST

START_TEST(test_old_clients_get_bare_status)
{
	static const uint8_t version[] = {0, 0, 0, 2};
	static const uint8_t unknown_ext[] = {0, 0, 0, 9, 0, 0, 0, 1, 'x'};
	struct request *req;

	reset_server();
	req = make_request(SSH2_FXP_INIT, version, sizeof(version));
	ck_assert_int_eq(request_start(req), HANDLER_DONE);
	request_free(req);
	req = make_request(SSH2_FXP_EXTENDED, unknown_ext, sizeof(unknown_ext));
	ck_assert_int_eq(request_start(req), HANDLER_DONE);
	ck_assert_uint_eq(req->reply.len, 13);
	request_free(req);
}
END_TEST

/* An EXTENDED request is classed by the name in its packet, before and
 * after its handler read the body: check-file* run beside READ and WRITE,
 * other extensions are barriers, and a name cut short is a barrier. */
START_TEST(test_extended_io_class)
{
	static const uint8_t check[] = {0,   0,   0,   7,   0,   0,   0,   15,
	                                'c', 'h', 'e', 'c', 'k', '-', 'f', 'i',
	                                'l', 'e', '-', 'n', 'a', 'm', 'e'};
	static const uint8_t copy[] = {0,   0,   0,   8,   0,   0,
	                               0,   9,   'c', 'o', 'p', 'y',
	                               '-', 'd', 'a', 't', 'a'};
	static const uint8_t cut[] = {0, 0, 0, 9, 0, 0, 0, 15, 'c', 'h'};
	struct request *req;

	reset_server();
	req = make_request(SSH2_FXP_EXTENDED, check, sizeof(check));
	ck_assert(request_is_io(req));
	ck_assert_int_eq(rbuf_skip(&req->body, 8), BUF_OK);
	ck_assert(request_is_io(req)); /* the body's position does not count */
	request_free(req);
	req = make_request(SSH2_FXP_EXTENDED, copy, sizeof(copy));
	ck_assert(!request_is_io(req));
	request_free(req);
	req = make_request(SSH2_FXP_EXTENDED, cut, sizeof(cut));
	ck_assert(!request_is_io(req));
	request_free(req);
}
END_TEST

/* The scope a request's packet gives it (request_scope). */
static struct order_scope scope_of(uint8_t type, const void *body, size_t len)
{
	struct request *req = make_request(type, body, len);
	struct order_scope s;

	request_scope(req);
	s = req->scope;
	request_free(req);
	return s;
}

/* A request that reports state sees every change requested before it:
 * it waits for a WRITE or an FSETSTAT of any other file (a listing shows
 * the files' sizes, statvfs the space they take), and the WRITE of a run
 * still being merged counts as in flight (queue.c).  Reads of other files
 * and FSTAT of another handle keep running beside them. */
START_TEST(test_reports_wait_for_changes)
{
	static const uint8_t on_handle[] = {0, 0, 0, 1, 0, 0, 0, 4, 0, 0, 0, 2};
	static const uint8_t on_path[] = {0, 0, 0, 1, 0, 0, 0, 1, 'd'};
	static const uint8_t statvfs[] = {
	    0,   0,   0,   1,   0,   0,   0,   19,  's', 't', 'a',
	    't', 'v', 'f', 's', '@', 'o', 'p', 'e', 'n', 's', 's',
	    'h', '.', 'c', 'o', 'm', 0,   0,   0,   1,   'd'};
	static const uint8_t fstatvfs[] = {
	    0,   0,   0,   1,   0,   0,   0,   20,  'f', 's', 't', 'a',
	    't', 'v', 'f', 's', '@', 'o', 'p', 'e', 'n', 's', 's', 'h',
	    '.', 'c', 'o', 'm', 0,   0,   0,   4,   0,   0,   0,   2};
	struct order_scope reports[6], write, read, fset, fstat, close;
	size_t i;

	reset_server();
	reports[0] = scope_of(SSH2_FXP_READDIR, on_handle, sizeof(on_handle));
	reports[1] = scope_of(SSH2_FXP_EXTENDED, fstatvfs, sizeof(fstatvfs));
	reports[2] = scope_of(SSH2_FXP_EXTENDED, statvfs, sizeof(statvfs));
	reports[3] = scope_of(SSH2_FXP_STAT, on_path, sizeof(on_path));
	reports[4] = scope_of(SSH2_FXP_LSTAT, on_path, sizeof(on_path));
	reports[5] = scope_of(SSH2_FXP_REALPATH, on_path, sizeof(on_path));
	fstat = scope_of(SSH2_FXP_FSTAT, on_handle, sizeof(on_handle));
	memset(&write, 0, sizeof(write));
	write.cls = ORDER_IO;
	write.handle = -1;
	write.has_file = 1;
	write.dev = 1;
	write.ino = 99;
	write.end = 4096;
	read = write;
	write.writes = 1;
	memset(&fset, 0, sizeof(fset));
	fset.cls = ORDER_HANDLE_WRITE;
	fset.handle = 5;
	fset.has_file = 1;
	fset.dev = 1;
	fset.ino = 99;
	for (i = 0; i < sizeof(reports) / sizeof(reports[0]); i++) {
		ck_assert_msg(order_conflict(&write, &reports[i]),
		              "report %zu runs beside a WRITE", i);
		ck_assert_msg(order_conflict(&reports[i], &fset),
		              "report %zu runs beside an FSETSTAT", i);
		ck_assert_msg(!order_conflict(&read, &reports[i]),
		              "report %zu waits for a READ", i);
	}
	/* FSTAT reports its own file only: another file's changes do not
	 * hold it up. */
	ck_assert(!order_conflict(&write, &fstat));
	ck_assert(!order_conflict(&fset, &fstat));
	/* statvfs and fstatvfs wait for a CLOSE (of a removed file, it
	 * frees space); READDIR and STAT do not. */
	close = scope_of(SSH2_FXP_CLOSE, on_handle, sizeof(on_handle));
	ck_assert(order_conflict(&close, &reports[1]));
	ck_assert(order_conflict(&reports[2], &close));
	ck_assert(!order_conflict(&close, &reports[0]));
	ck_assert(!order_conflict(&close, &reports[3]));
}
END_TEST

START_TEST(test_name_in_list)
{
	char forty[1024], forty_one[1024];
	int i;

	ck_assert_int_eq(name_in_list("read", "read"), 1);
	ck_assert_int_eq(name_in_list("read", "open,read,write"), 1);
	ck_assert_int_eq(name_in_list("read", "read,"), 1);
	/* Exact and case-sensitive. */
	ck_assert_int_eq(name_in_list("read", "READ"), 0);
	ck_assert_int_eq(name_in_list("read", "rea"), 0);
	ck_assert_int_eq(name_in_list("read", "reads"), 0);
	ck_assert_int_eq(name_in_list("read", "readdir"), 0);
	ck_assert_int_eq(name_in_list("read", "*"), 0);
	ck_assert_int_eq(name_in_list("read", " read"), 0);
	/* The list ends at its first empty item. */
	ck_assert_int_eq(name_in_list("read", "open,,read"), 0);
	ck_assert_int_eq(name_in_list("read", ",read"), 0);
	ck_assert_int_eq(name_in_list("read", ""), 0);
	ck_assert_int_eq(name_in_list("", "open,,read"), 0);
	ck_assert_int_eq(name_in_list("read", NULL), 0);

	/* Only the first 40 items count. */
	forty[0] = '\0';
	for (i = 0; i < 39; i++)
		strcat(forty, "x,");
	strcpy(forty_one, forty);
	strcat(forty, "read");
	strcat(forty_one, "x,read");
	ck_assert_int_eq(name_in_list("read", forty), 1);
	ck_assert_int_eq(name_in_list("read", forty_one), 0);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("handlers");
	TCase *tc = tcase_create("table");
	SRunner *sr;
	int failed;

	tcase_add_test(tc, test_table_lookups);
	tcase_add_test(tc, test_reports_wait_for_changes);
	tcase_add_test(tc, test_name_in_list);
	tcase_add_test(tc, test_readonly_refuses_writers);
	tcase_add_test(tc, test_deny_and_allow_lists);
	tcase_add_test(tc, test_version_extensions);
	tcase_add_test(tc, test_before_init_is_fatal);
	tcase_add_test(tc, test_init_and_unknowns);
	tcase_add_test(tc, test_every_parse_error_has_its_line);
	tcase_add_test(tc, test_old_clients_get_bare_status);
	tcase_add_test(tc, test_extended_io_class);
	suite_add_tcase(s, tc);
	sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed == 0 ? 0 : 1;
}
