/* SPDX-License-Identifier: ISC
 * Copyright (c) 2026 The uring-sftp-server developers.  See LICENSE. */
/* What the kernel tells of the user's pipe quota (fs.pipe-user-pages-*)
 * and of the sessions sharing it.  Fixed system files only, never a
 * client's path; kept apart from the pipe pool (pipes.c), which is on the
 * I/O path and opens nothing by path. */
#include "config.h"

#include <dirent.h>
#include <linux/capability.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "pipe-quota.h"

unsigned long read_sysctl(const char *path, unsigned long dflt)
{
	unsigned long v = dflt;
	FILE *f = fopen(path, "re");

	if (f == NULL)
		return dflt;
	if (fscanf(f, "%lu", &v) != 1)
		v = dflt;
	fclose(f);
	return v;
}

/* The kernel exempts CAP_SYS_RESOURCE and CAP_SYS_ADMIN from the quota. */
static int quota_exempt(void)
{
	struct __user_cap_header_struct hdr = {_LINUX_CAPABILITY_VERSION_3, 0};
	struct __user_cap_data_struct data[2];

	if (syscall(SYS_capget, &hdr, data) != 0)
		return 0;
	return (data[0].effective & (1u << CAP_SYS_RESOURCE)) ||
	       (data[0].effective & (1u << CAP_SYS_ADMIN));
}

/* Sessions of this server the user runs now, this one included: the
 * processes of our uid with our name.  Each reads only its own
 * /proc/PID/comm (readable though the server is not dumpable). */
unsigned pipe_quota_sessions(void)
{
	char self[32] = "", comm[32], path[300];
	struct dirent *e;
	struct stat st;
	unsigned n = 0;
	uid_t uid = getuid();
	FILE *f;
	DIR *d;

	if ((f = fopen("/proc/self/comm", "re")) == NULL)
		return 1;
	if (fgets(self, sizeof(self), f) == NULL)
		self[0] = '\0';
	fclose(f);
	if (self[0] == '\0' || (d = opendir("/proc")) == NULL)
		return 1;
	while ((e = readdir(d)) != NULL) {
		if (e->d_name[0] < '1' || e->d_name[0] > '9')
			continue;
		snprintf(path, sizeof(path), "/proc/%s", e->d_name);
		if (stat(path, &st) != 0 || st.st_uid != uid)
			continue;
		snprintf(path, sizeof(path), "/proc/%s/comm", e->d_name);
		if ((f = fopen(path, "re")) == NULL)
			continue;
		if (fgets(comm, sizeof(comm), f) != NULL &&
		    strcmp(comm, self) == 0)
			n++;
		fclose(f);
	}
	closedir(d);
	return n > 0 ? n : 1;
}

void pipe_quota_read(struct pipe_limits *l, unsigned long page_size)
{
	/* The kernel's defaults where they cannot be read. */
	l->soft_pages = read_sysctl("/proc/sys/fs/pipe-user-pages-soft", 16384);
	l->hard_pages = read_sysctl("/proc/sys/fs/pipe-user-pages-hard", 0);
	l->max_pages =
	    read_sysctl("/proc/sys/fs/pipe-max-size", 1024 * 1024) / page_size;
	if (l->max_pages == 0)
		l->max_pages = 1024 * 1024 / page_size;
	l->exempt = quota_exempt();
}
