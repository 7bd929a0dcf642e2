/* SPDX-License-Identifier: ISC
 * Copyright (c) 2026 The uring-sftp-server developers.  See LICENSE. */
/* Session-wide state shared by the handlers. */
#ifndef SERVER_H
#define SERVER_H

#include <stdint.h>

#include "options.h"

struct server {
	struct options opt;
	int init_done;
	uint32_t client_version;
	const char *user;        /* the logged-in user's name */
	const char *home;        /* their home directory */
	const char *client_addr; /* first word of SSH_CONNECTION */
	/* The client (WinSCP, by its vendor-id) reads check-file's reply
	 * without the "check-file" name, as ProFTPD sends it. */
	int client_reads_no_name;
};

extern struct server srv;

#endif
