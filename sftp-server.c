/* SPDX-License-Identifier: ISC
 * Copyright (c) 2026 The uring-sftp-server developers.  See LICENSE. */
/* uring-sftp-server: main, start-up as OpenSSH's sftp-server does it, and
 * the event loop's system calls: ppoll on stdin, stdout and the back end,
 * as session.c decides (session.h); stdin and stdout themselves are read
 * and written through session.c's and output.c's operation tables. */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pwd.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <syslog.h>
#include <time.h>
#include <unistd.h>

#ifdef __SANITIZE_ADDRESS__
#include <sanitizer/lsan_interface.h>
#endif
#ifdef STATIC_BINARY
#include <nss.h>
#endif

#include "backend.h"
#include "cancel.h"
#include "coalesce.h"
#include "confine.h"
#include "handle.h"
#include "handlers.h"
#include "hash.h"
#include "hostcheck.h"
#include "input.h"
#include "kernelrules.h"
#include "log.h"
#include "monotonic.h"
#include "nocache.h"
#include "options.h"
#include "output.h"
#include "readmem.h"
#include "stdio-pipes.h"
#include "workers.h"
#include "queue.h"
#include "testkernel.h"
#include "upload.h"
#include "xferlog.h"
#include "server.h"
#include "session.h"
#include "sftp.h"

/* Large reads from stdin: several maximum-size packets per system call,
 * into chunks of this size, at most INPUT_CHUNKS of them held at once. */
#define INPUT_CHUNK (1024 * 1024)
#define INPUT_CHUNKS 16
/* Stop framing new requests while this much reply data waits. */
#define MAX_REPLY_BYTES (8 * 1024 * 1024)
/* Ask the kernel for bigger socket send buffers (net.core.wmem_max caps
 * them: 208 KiB on a stock system).  Pipes grow in stdio-pipes.c, within
 * the session's share of the user's pipe quota. */
#define SOCKET_SNDBUF (4 * 1024 * 1024)

static void cleanup_exit(int status)
{
	handle_close_all();
	logit("session closed for local user %s from [%s]", srv.user,
	      srv.client_addr);
	backend->shutdown();
#ifdef __SANITIZE_ADDRESS__
	/* _exit skips LeakSanitizer's own check at exit. */
	__lsan_do_leak_check();
#endif
	_exit(status);
}

static void log_cleanup(int status)
{
	cleanup_exit(status);
}

/* Make sure fds 0-2 exist, so a file we open never becomes stdout. */
static void sanitise_stdfd(void)
{
	int fd;

	while ((fd = open("/dev/null", O_RDWR)) != -1 && fd <= STDERR_FILENO)
		;
	if (fd > STDERR_FILENO)
		close(fd);
}

static void tune_stdio(int fd)
{
	struct stat st;
	int flags;

	if (fstat(fd, &st) == -1)
		return;
	if (S_ISFIFO(st.st_mode))
		stdio_pipe_grow(fd); /* within the session's share */
	/* A local socket's writer is woken once three quarters of its send
	 * buffer are free: a bigger one means fewer, larger turns (capped
	 * by net.core.wmem_max). */
	if (S_ISSOCK(st.st_mode) && fd == STDOUT_FILENO)
		(void)setsockopt(fd, SOL_SOCKET, SO_SNDBUF,
		                 &(int){SOCKET_SNDBUF}, sizeof(int));
	/* Non-blocking only on pipes and sockets, never on someone's tty,
	 * and not stdout where its writes may block (stdio-pipes.h). */
	if (!S_ISFIFO(st.st_mode) && !S_ISSOCK(st.st_mode))
		return;
	if ((flags = fcntl(fd, F_GETFL)) == -1)
		return;
	if (fd == STDOUT_FILENO &&
	    stdout_may_block(stdio_reader(), S_ISFIFO(st.st_mode))) {
		if (fcntl(fd, F_SETFL, flags & ~O_NONBLOCK) == 0)
			debug("stdout: read by sshd, its writes block");
	} else {
		(void)fcntl(fd, F_SETFL, flags | O_NONBLOCK);
	}
}

static const char *client_address(void)
{
	char *conn = getenv("SSH_CONNECTION"), *space;
	static char addr[256];

	if (conn == NULL)
		return "UNKNOWN";
	if ((space = strchr(conn, ' ')) == NULL) {
		srv.client_addr = conn; /* OpenSSH's closing line shows it */
		fatal_exit(255, "Malformed SSH_CONNECTION variable: \"%s\"",
		           conn);
	}
	snprintf(addr, sizeof(addr), "%.*s", (int)(space - conn), conn);
	return addr;
}

/*
 * No passwd entry for our uid: typical inside a ChrootDirectory jail that
 * holds nothing but this program.  OpenSSH's server exits here; we go on
 * with the numeric uid as the user name and sshd's $HOME (the home
 * directory from the passwd entry sshd saw outside the jail) or "/".
 * The name only appears in log lines and -d's %u; the kernel, not the
 * name, decides what the session may touch.
 */
static void set_user_without_passwd(void)
{
	const char *home = getenv("HOME");
	char *name;

	if (asprintf(&name, "%lu", (unsigned long)getuid()) == -1)
		name = NULL;
	srv.user = name;
	srv.home = strdup(home != NULL && home[0] == '/' ? home : "/");
}

/*
 * A static executable must not let glibc load NSS modules: for a name not
 * in /etc/passwd it would dlopen what nsswitch.conf names next (Debian:
 * libnss_systemd), which crashes a static program.  glibc reads
 * /etc/passwd and /etc/group itself, so names come from there only.  In a
 * jail without nsswitch.conf that is glibc's default anyway.
 */
static void nss_files_only(void)
{
#ifdef STATIC_BINARY
	(void)__nss_configure_lookup("passwd", "files");
	(void)__nss_configure_lookup("group", "files");
#endif
}

static void set_handle_limit(void)
{
	struct rlimit rl;

	/* Descriptors bound handles anyway; the table never outgrows
	 * them. */
	if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur != RLIM_INFINITY)
		handle_set_limit((unsigned)rl.rlim_cur);
}

/* The worker threads' signal that a job finished (workers.h): blocked
 * but while the loop sleeps in ppoll, which it then wakes.  The handler
 * has nothing to do: the loop reaps what finished when it wakes. */
static sigset_t sleep_mask;

static void on_worker_done(int sig)
{
	(void)sig;
}

static void setup_worker_signal(void)
{
	struct sigaction sa;
	sigset_t block;
	int sig = SIGRTMIN;

	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_worker_done;
	sigemptyset(&sa.sa_mask);
	sigaction(sig, &sa, NULL);
	sigemptyset(&block);
	sigaddset(&block, sig);
	sigprocmask(SIG_BLOCK, &block, &sleep_mask);
	sigdelset(&sleep_mask, sig);
	workers_init(sig);
}

/* Sleep until what session_plan() asks for, and tell session_wake() what
 * happened. */
static void wait_for_events(void)
{
	struct session_wait w;
	struct session_events ev = {0};
	struct pollfd pfd[3];
	struct timespec pause, *timeout = NULL;
	int nfds = 0, rc, i;

	session_plan(&w, monotonic_ns());
	if (w.input)
		pfd[nfds++] = (struct pollfd){STDIN_FILENO, POLLIN, 0};
	/* Without POLLOUT, poll still reports POLLERR and POLLHUP: the
	 * reader leaving. */
	if (w.watch_output)
		pfd[nfds++] =
		    (struct pollfd){STDOUT_FILENO, w.output ? POLLOUT : 0, 0};
	if (w.completion_fd >= 0)
		pfd[nfds++] = (struct pollfd){w.completion_fd, POLLIN, 0};

	if (w.timeout_ns >= 0) {
		pause.tv_sec = w.timeout_ns / 1000000000;
		pause.tv_nsec = w.timeout_ns % 1000000000;
		timeout = &pause;
	}
	rc = ppoll(pfd, (nfds_t)nfds, timeout, &sleep_mask);
	if (rc == -1 && errno != EINTR) {
		error("poll: %s", errno_text(errno));
		cleanup_exit(2);
	}
	ev.timed_out = rc == 0;
	for (i = 0; rc > 0 && i < nfds; i++) {
		if (pfd[i].fd == STDIN_FILENO && pfd[i].revents != 0)
			ev.input = 1;
		if (pfd[i].fd != STDOUT_FILENO)
			continue;
		if (pfd[i].revents & POLLOUT)
			ev.output = 1;
		if (pfd[i].revents & (POLLERR | POLLHUP | POLLNVAL))
			ev.output_error = 1;
	}
	session_wake(&ev, monotonic_ns());
}

static void serve(void)
{
	const char *fatal;
	int step, status;

	session_init(&session_stdin_ops);
	session_size_stdout(stdio_stdout_least(), stdio_stdout_most());
	while ((step = session_turn()) != SESSION_DONE)
		if (step == SESSION_WAIT)
			wait_for_events();
	status = session_exit_status(&fatal);
	if (fatal != NULL)
		fatal_exit(status, "%s", fatal);
	cleanup_exit(status);
}

/* Where sshd started us (the home directory), before -d moved us. */
static char first_cwd[PATH_MAX];

/* path as an absolute path: from base when relative, as text (nothing is
 * resolved: confine_start walks it without following symlinks).  0, or
 * -1 with the reason in why. */
static int absolute_text(char *out, size_t size, const char *base,
                         const char *path, char *why, size_t why_size)
{
	int n;

	if (path[0] == '/')
		n = snprintf(out, size, "%s", path);
	else
		n = snprintf(out, size, "%s/%s", base, path);
	if (n < 0 || (size_t)n >= size) {
		snprintf(why, why_size, "\"%.100s...\": %s", path,
		         errno_text(ENAMETOOLONG));
		return -1;
	}
	return 0;
}

/* The confinement directory is named by text, as configured: -d (after its
 * expansions, from where sshd started us), or DIR (after the same
 * expansions, from the start directory), never by where a chdir through
 * symlinks led.  Into dir (PATH_MAX bytes): 0, or -1 with the reason in
 * why. */
static int confinement_dir(char *dir, uid_t uid, int start_dir_reached,
                           char *why, size_t why_size)
{
	char start[PATH_MAX], *expanded;
	int rc;

	if (first_cwd[0] == '\0') {
		snprintf(why, why_size,
		         "the directory sshd started us in is unknown");
		return -1;
	}
	if (srv.opt.start_dir != NULL && start_dir_reached) {
		if (absolute_text(start, sizeof(start), first_cwd,
		                  srv.opt.start_dir, why, why_size) != 0)
			return -1;
	} else {
		strlcpy(start, first_cwd, sizeof(start));
	}
	if (srv.opt.confine_dir == NULL) {
		strlcpy(dir, start, PATH_MAX);
		return 0;
	}
	/* DIR takes the same expansions as -d. */
	expanded = expand_start_dir(srv.opt.confine_dir, srv.user, srv.home,
	                            (unsigned long)uid);
	if (expanded == NULL) {
		snprintf(why, why_size, "cannot expand \"%s\"",
		         srv.opt.confine_dir);
		return -1;
	}
	rc = absolute_text(dir, PATH_MAX, start, expanded, why, why_size);
	free(expanded);
	return rc;
}

static void start_confined(uid_t uid, int start_dir_reached)
{
	char dir[PATH_MAX], why[PATH_MAX];

	if (confinement_dir(dir, uid, start_dir_reached, why, sizeof(why)) != 0)
		fatal_exit(CONFINE_EXIT,
		           "--confine: %s; refusing to run unconfined", why);
	/* libcrypto is loaded when a hash is first asked for; once confined,
	 * its directory would be shut: now, then.  Without it, only the
	 * hashes fail. */
	if (hash_crypto_load() != 0)
		debug("libcrypto (%s) not loaded: check-file gets only crc32",
		      LIBCRYPTO_SONAME);
	confine_start(dir);
}

/* --check: what this host gives a session started as this one would be
 * (the start directory, --confine's directory), printed; exit 0. */
static int __attribute__((noreturn)) run_check(void)
{
	static struct hostcheck h;
	char dir[PATH_MAX], why[PATH_MAX];
	int reached = 0, err = 0, have_dir;

	if (getcwd(first_cwd, sizeof(first_cwd)) == NULL)
		first_cwd[0] = '\0';
	if (srv.opt.start_dir != NULL &&
	    (reached = chdir(srv.opt.start_dir) == 0) == 0)
		err = errno;
	if (srv.opt.start_dir != NULL && !reached &&
	    srv.opt.confine_dir == NULL) {
		snprintf(why, sizeof(why), "no start directory");
		have_dir = 0;
	} else {
		have_dir = confinement_dir(dir, getuid(), reached, why,
		                           sizeof(why)) == 0;
	}
	hostcheck_gather(&h, srv.opt.queue_depth, srv.opt.start_dir, err,
	                 have_dir ? dir : NULL, why);
	if (srv.opt.check == CHECK_JSON)
		hostcheck_print_json(&h, stdout);
	else
		hostcheck_print_text(&h, stdout);
	exit(fflush(stdout) == 0 ? 0 : 1);
}

int main(int argc, char **argv)
{
	struct queue_limits limits;
	struct passwd *pw;
	const char *progname;
	int rc, start_dir_reached = 0;

	sanitise_stdfd();
	closefrom(STDERR_FILENO + 1);
	progname = strrchr(argv[0], '/') ? strrchr(argv[0], '/') + 1 : argv[0];
	log_init(progname, LOG_LEVEL_ERROR, LOG_AUTH, 0);
	nss_files_only();
	pw = getpwuid(getuid());
	if (pw != NULL) {
		srv.user = strdup(pw->pw_name);
		srv.home = strdup(pw->pw_dir);
	} else {
		set_user_without_passwd();
	}
	if (srv.user == NULL || srv.home == NULL)
		fatal_exit(255, "out of memory");
	switch (parse_options(&srv.opt, argc, argv, srv.user, srv.home,
	                      (unsigned long)getuid())) {
	case OPTIONS_EXIT_OK:
		return 0;
	case OPTIONS_QUERY_REQUESTS:
		print_request_names(stdout);
		return 0;
	}
	log_init(progname, srv.opt.log_level, srv.opt.log_facility,
	         srv.opt.log_stderr);
	if (pw == NULL)
		verbose("no passwd entry for uid %lu: user \"%s\", home \"%s\"",
		        (unsigned long)getuid(), srv.user, srv.home);
	log_set_cleanup(log_cleanup);
	testkernel_init(); /* a test's older kernel: testkernel.h */
	if (srv.opt.check != CHECK_NONE)
		run_check();
	/* Before --confine closes /proc to us (Landlock). */
	if (srv.opt.atomic_uploads && srv.opt.confine)
		kernelrules_init();
	/* Keep other processes of this user out of our memory. */
	if (prctl(PR_SET_DUMPABLE, 0) != 0)
		fatal_exit(255, "unable to make the process undumpable: %s",
		           errno_text(errno));
	srv.client_addr = client_address();
	logit("session opened for local user %s from [%s]", srv.user,
	      srv.client_addr);
	/* Before -d: a relative FILE is taken from where sshd started us. */
	if (srv.opt.xferlog_path != NULL)
		(void)xferlog_open(srv.opt.xferlog_path,
		                   (enum xferlog_format)srv.opt.xferlog_format,
		                   srv.user);
	if (getcwd(first_cwd, sizeof(first_cwd)) == NULL)
		first_cwd[0] = '\0';
	if (srv.opt.start_dir != NULL &&
	    (start_dir_reached = chdir(srv.opt.start_dir) == 0) == 0) {
		error("chdir to \"%s\" failed: %s", srv.opt.start_dir,
		      errno_text(errno));
		/* The home directory is no confinement directory. */
		if (srv.opt.confine && srv.opt.confine_dir == NULL)
			fatal_exit(CONFINE_EXIT,
			           "--confine: no start directory; refusing "
			           "to run unconfined");
	}

	signal(SIGPIPE, SIG_IGN);
	setup_worker_signal();
	set_handle_limit();
	stdio_set_reader(
	    stdout_reader_of(getenv("SSH_CONNECTION"), getenv("SSH_TTY")));
	tune_stdio(STDIN_FILENO);
	tune_stdio(STDOUT_FILENO);
	output_init(&output_stdout_ops, output_stdout_setup());
	if ((rc = backend_start(srv.opt.backend, srv.opt.queue_depth)) != 0)
		fatal_exit(1, "cannot start the %s back end: %s",
		           srv.opt.backend == BACKEND_URING ? "io_uring"
		                                            : "plain",
		           errno_text(-rc));
	limits.max_requests = srv.opt.queue_depth;
	limits.max_reply_bytes = MAX_REPLY_BYTES;
	queue_init(&limits);
	coalesce_init(srv.opt.write_merge);
	nocache_wanted = srv.opt.nocache;
	if (input_init(INPUT_CHUNK, INPUT_CHUNKS) != 0 ||
	    readmem_init(srv.opt.queue_depth) != 0)
		fatal_exit(1, "out of memory");
	/* Last, so that everything above could still open what it needed;
	 * before the first request is read. */
	if (srv.opt.confine) /* pw is NULL without an entry */
		start_confined(getuid(), start_dir_reached);
	/* A checksum or copy stops once its client has gone (cancel.h). */
	work_cancel_watch_stdio();
	serve();
	return 0;
}
