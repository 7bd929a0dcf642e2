/* SPDX-License-Identifier: ISC
 * Copyright (c) 2026 The uring-sftp-server developers.  See LICENSE. */
/*
 * confine-probe: the kernel half of --confine on its own.  It confines
 * itself with confine_start() as the server does, then makes the system
 * calls directly, by path, with no resolver in between: everything outside
 * DIR that Landlock governs must fail, and the same work inside must work.
 * tests/confine.py runs it as the unprivileged user, on a tree it made.
 *
 *   confine-probe DIR OUTSIDE
 *
 * DIR must hold a.txt and sub/; OUTSIDE secret.txt and outdir/.  Prints
 * one line per check and "N passed, N failed"; exit status 0 or 1.
 */
#include "config.h"

#include <arpa/inet.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "confine.h"
#include "landlock-sys.h"
#include "log.h"
#include "testkernel.h"

static int passed, failed, abi;
static char in[4096], out[4096];

static void result(int good, const char *what, int rc, int err)
{
	if (good)
		passed++;
	else
		failed++;
	printf("%s: %s (%s)\n", good ? "ok" : "FAIL", what,
	       rc == -1 ? strerror(err) : "succeeded");
}

/* The call must fail with EACCES (or EXDEV, Landlock's answer to a
 * rename or link across the boundary). */
static void denied(const char *what, int rc)
{
	int err = errno;

	result(rc == -1 && (err == EACCES || err == EXDEV), what, rc, err);
}

static void allowed(const char *what, int rc)
{
	result(rc != -1, what, rc, errno);
}

static const char *at(const char *dir, const char *name)
{
	static char buf[4][8192];
	static int next;
	char *b = buf[next++ % 4];

	snprintf(b, sizeof(buf[0]), "%s/%s", dir, name);
	return b;
}

static int open_close(const char *path, int flags)
{
	int fd = open(path, flags, 0644);

	if (fd >= 0)
		close(fd);
	return fd < 0 ? -1 : 0;
}

static int list_dir(const char *path)
{
	DIR *d = opendir(path);

	if (d == NULL)
		return -1;
	closedir(d);
	return 0;
}

/* A TCP listener made before confinement, so that connect has a peer. */
static int listener(struct sockaddr_in *addr)
{
	socklen_t len = sizeof(*addr);
	int s = socket(AF_INET, SOCK_STREAM, 0);

	memset(addr, 0, sizeof(*addr));
	addr->sin_family = AF_INET;
	addr->sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	if (s < 0 || bind(s, (struct sockaddr *)addr, sizeof(*addr)) != 0 ||
	    listen(s, 1) != 0 ||
	    getsockname(s, (struct sockaddr *)addr, &len) != 0)
		return -1;
	return s;
}

static void outside(void)
{
	struct stat st;
	int rc, err;

	denied("read a file outside",
	       open_close(at(out, "secret.txt"), O_RDONLY));
	denied("write a file outside",
	       open_close(at(out, "secret.txt"), O_WRONLY));
	denied("create a file outside",
	       open_close(at(out, "new.txt"), O_WRONLY | O_CREAT));
	if (abi >= 3) /* LANDLOCK_ACCESS_FS_TRUNCATE */
		denied("truncate a file outside",
		       truncate(at(out, "secret.txt"), 0));
	else
		printf("note: Landlock ABI %d has no truncate right: only the "
		       "server's path resolution refuses truncate outside\n",
		       abi);
	denied("list a directory outside", list_dir(out));
	denied("mkdir outside", mkdir(at(out, "newdir"), 0755));
	denied("unlink outside", unlink(at(out, "secret.txt")));
	denied("rmdir outside", rmdir(at(out, "outdir")));
	denied("symlink outside", symlink("x", at(out, "link")));
	denied("rename out of DIR", rename(at(in, "a.txt"), at(out, "a.txt")));
	denied("rename into DIR",
	       rename(at(out, "secret.txt"), at(in, "got.txt")));
	denied("link an outside file into DIR",
	       link(at(out, "secret.txt"), at(in, "got.txt")));
	denied("link a DIR file outside",
	       link(at(in, "a.txt"), at(out, "a.txt")));
	denied("read / (the root directory)", list_dir("/"));
	denied("read /etc/passwd", open_close("/etc/passwd", O_RDONLY));
	rc = stat(at(out, "new.txt"), &st);
	err = errno;
	result(rc == -1 && err == ENOENT, "nothing was created outside", rc,
	       err);
}

static void inside(void)
{
	allowed("read inside", open_close(at(in, "a.txt"), O_RDONLY));
	allowed("write inside", open_close(at(in, "a.txt"), O_RDWR));
	allowed("create inside",
	        open_close(at(in, "new.txt"), O_WRONLY | O_CREAT));
	allowed("truncate inside", truncate(at(in, "new.txt"), 0));
	allowed("list inside", list_dir(in));
	allowed("mkdir inside", mkdir(at(in, "d"), 0755));
	if (abi >= 2) {
		allowed("rename across directories inside",
		        rename(at(in, "new.txt"), at(in, "d/new.txt")));
		allowed("link across directories inside",
		        link(at(in, "d/new.txt"), at(in, "sub/hard.txt")));
	} else {
		/* ABI 1 refuses every reparenting (no REFER right). */
		allowed("rename inside",
		        rename(at(in, "new.txt"), at(in, "d/../new2.txt")));
		allowed("link inside",
		        link(at(in, "new2.txt"), at(in, "hard.txt")));
		allowed("unlink inside", unlink(at(in, "hard.txt")));
		allowed("rename inside",
		        rename(at(in, "new2.txt"), at(in, "d/../new.txt")));
		denied("rename across directories (ABI 1)",
		       rename(at(in, "new.txt"), at(in, "d/new.txt")));
		allowed("unlink inside", unlink(at(in, "new.txt")));
		allowed("create inside",
		        open_close(at(in, "d/new.txt"), O_WRONLY | O_CREAT));
		allowed("create inside",
		        open_close(at(in, "sub/hard.txt"), O_WRONLY | O_CREAT));
	}
	allowed("symlink inside", symlink("a.txt", at(in, "sym")));
	allowed("unlink inside", unlink(at(in, "sub/hard.txt")));
	allowed("unlink inside", unlink(at(in, "d/new.txt")));
	allowed("rmdir inside", rmdir(at(in, "d")));
	denied("make a FIFO inside (not needed, not allowed)",
	       mkfifo(at(in, "fifo"), 0644));
}

int main(int argc, char **argv)
{
	struct sockaddr_in addr;
	int lsn, s;

	if (argc != 3) {
		fprintf(stderr, "usage: confine-probe DIR OUTSIDE\n");
		return 2;
	}
	snprintf(in, sizeof(in), "%s", argv[1]);
	snprintf(out, sizeof(out), "%s", argv[2]);
	log_init("confine-probe", LOG_LEVEL_INFO, 0, 1);
	lsn = listener(&addr);
	if (chdir(in) != 0) {
		perror(in);
		return 2;
	}
	/* As the server: a test's older kernel may have an older ABI. */
	testkernel_init();
	abi = testkernel_landlock_abi(
	    (int)syscall(__NR_landlock_create_ruleset, NULL, 0, 1));
	confine_start(in);
	outside();
	inside();
	{
		char *const args[] = {"/bin/true", NULL};

		denied("execute a program", execv("/bin/true", args));
	}
	if (abi >= 6) {
		/* Signal scoping: the parent is outside our domain. */
		int rc = kill(getppid(), 0), err = errno;

		result(rc == -1 && err == EPERM, "signal a process outside", rc,
		       err);
	}
	if (lsn >= 0 && abi >= 4) {
		s = socket(AF_INET, SOCK_STREAM, 0);
		denied("connect to TCP (no network needed)",
		       connect(s, (struct sockaddr *)&addr, sizeof(addr)));
	}
	printf("%d passed, %d failed\n", passed, failed);
	return failed ? 1 : 0;
}
