/* uring-sftp-server: main, start-up as OpenSSH's sftp-server does it, and
 * the event loop that moves bytes between stdin, the queue and stdout. */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <malloc.h>
#include <poll.h>
#include <pwd.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <syslog.h>
#include <unistd.h>

#ifdef __SANITIZE_ADDRESS__
#include <sanitizer/lsan_interface.h>
#endif

#include "backend.h"
#include "coalesce.h"
#include "handle.h"
#include "input.h"
#include "log.h"
#include "options.h"
#include "outpace.h"
#include "pipes.h"
#include "queue.h"
#include "server.h"
#include "sftp.h"

/* Large reads from stdin: several maximum-size packets per system call,
 * into chunks of this size, at most INPUT_CHUNKS of them held at once. */
#define INPUT_CHUNK (1024 * 1024)
#define INPUT_CHUNKS 16
/* Stop framing new requests while this much reply data waits. */
#define MAX_REPLY_BYTES (8 * 1024 * 1024)
/* Largest reply we build: a DATA of SFTP_MAX_READ_LENGTH fits well. */
#define MAX_REPLY_PACKET (SFTP_MAX_MSG_LENGTH + 1024)
/* Ask the kernel for bigger socket send buffers (what spliced replies
 * hold there is mostly references to page-cache pages).
 * net.core.wmem_max caps them: 208 KiB on a stock system.  Pipes grow in
 * pipes.c, within the session's pipe budget. */
#define SOCKET_SNDBUF (4 * 1024 * 1024)
#define MAX_IOV 64
/* Replies waiting on a full stdout that keep it busy for a while; while
 * they do, stdin is not watched, only looked at every 10 ms. */
#define OUTPUT_BACKLOG (1024 * 1024)
#define HELD_INPUT_RECHECK_NS 10000000
/* Nothing to do for this long: close the spare splice pipes, which count
 * against the user's pipe buffer quota (fs.pipe-user-pages-soft). */
#define SPARE_PIPES_IDLE_NS 1000000000

static int input_eof;          /* stdin returned 0 */
static int output_gone;        /* stdout's reader left: replies are dropped */
static int input_stop;         /* a framing error: read and frame no more */
static int exit_status;        /* the status once everything is answered */
static const char *exit_fatal; /* logged as fatal before that exit */

static void cleanup_exit(int status)
{
	handle_close_all();
	logit("session closed for local user %s from [%s]", srv.user,
	      srv.client_addr);
	backend->shutdown();
	pipes_release_spares();
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
		pipes_tune_stdio(fd); /* within the session's pipe budget */
	/* A local socket's writer is woken once three quarters of its send
	 * buffer are free: a bigger one means fewer, larger turns (capped
	 * by net.core.wmem_max). */
	if (S_ISSOCK(st.st_mode) && fd == STDOUT_FILENO)
		(void)setsockopt(fd, SOL_SOCKET, SO_SNDBUF,
		                 &(int){SOCKET_SNDBUF}, sizeof(int));
	/* Non-blocking only on pipes and sockets: never on someone's tty. */
	if ((S_ISFIFO(st.st_mode) || S_ISSOCK(st.st_mode)) &&
	    (flags = fcntl(fd, F_GETFL)) != -1)
		(void)fcntl(fd, F_SETFL, flags | O_NONBLOCK);
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

static void set_handle_limit(void)
{
	struct rlimit rl;

	/* Descriptors bound handles anyway; the table never outgrows
	 * them. */
	if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur != RLIM_INFINITY)
		handle_set_limit((unsigned)rl.rlim_cur);
}

static void stop_input(int status, const char *fatal)
{
	input_stop = 1;
	exit_status = status;
	exit_fatal = fatal;
}

/* Cut complete packets off the input and admit them, while there is
 * room. */
static void frame_input(void)
{
	struct request *req;

	while (!input_stop && queue_has_room()) {
		switch (input_frame(&req, MAX_REPLY_PACKET)) {
		case FRAME_NONE:
			return;
		case FRAME_REQUEST:
			queue_admit(req);
			break;
		case FRAME_TOO_LONG:
			error("bad message from %s local user %s",
			      srv.client_addr, srv.user);
			stop_input(11, NULL);
			return;
		case FRAME_EMPTY:
			stop_input(255, "process: parse: incomplete message");
			return;
		default:
			fatal_exit(255, "frame_input: out of memory");
		}
	}
}

/* READ replies are spliced when stdout is a pipe (as Debian's sshd gives
 * us) or a socket (other sshd builds, sftp -D) and the back end can do
 * it; else their bytes are copied. */
static void setup_splice(void)
{
	if (!srv.opt.no_splice && backend->can_splice())
		(void)pipes_init(srv.opt.queue_depth, STDOUT_FILENO);
}

static int complete_packet_waiting(void)
{
	size_t avail;
	const uint8_t *p = input_data(&avail);

	return !input_stop && avail >= 4 && avail - 4 >= peek_u32(p);
}

/* Room to read stdin into (none while every input chunk is held). */
static uint8_t *input_room(size_t *room)
{
	return input_space(room, input_missing());
}

static void read_input(void)
{
	size_t room;
	uint8_t *buf = input_room(&room);
	ssize_t n;

	if (buf == NULL)
		return;
	n = read(STDIN_FILENO, buf, room);
	if (n > 0) {
		input_added((size_t)n);
	} else if (n == 0) {
		debug("read eof");
		input_eof = 1;
	} else if (errno == ECONNRESET) {
		/* A socketpair's client went away: like end of file. */
		debug("read: %s", strerror(errno));
		input_eof = 1;
	} else if (errno != EAGAIN && errno != EINTR) {
		error("read: %s", strerror(errno));
		cleanup_exit(1);
	}
}

/* Nobody reads stdout any more.  The requests already received are still
 * carried out (an upload's last writes land in the file), their replies
 * dropped, until stdin ends too. */
static void output_failed(ssize_t n)
{
	if (n == -1 && errno != EPIPE && errno != ECONNRESET) {
		error("write: %s", strerror(errno));
		cleanup_exit(1);
	}
	debug("write: %s", n == 0 ? "closed" : strerror(errno));
	output_gone = 1;
	pipes_output_closed();
}

static void drop_output(void)
{
	struct iovec iov[MAX_IOV];
	size_t len;
	int cnt, i;

	for (;;) {
		queue_output_consumed(0);
		if (queue_output_pipe(&len) >= 0) {
			queue_output_piped(len);
			continue;
		}
		if ((cnt = queue_output_iov(iov, MAX_IOV)) == 0)
			return;
		for (len = 0, i = 0; i < cnt; i++)
			len += iov[i].iov_len;
		queue_output_consumed(len);
	}
}

/* Move the head reply's data from its pipe to stdout: no copy.  Returns 1
 * when stdout is full. */
static int splice_output(int pipe_rd, size_t len)
{
	ssize_t n = splice(pipe_rd, NULL, STDOUT_FILENO, NULL, len,
	                   SPLICE_F_MOVE | SPLICE_F_NONBLOCK);

	if (n == -1 && errno == EINTR)
		return 0;
	if (n == -1 && errno == EAGAIN)
		return 1;
	if (n <= 0) {
		output_failed(n);
		return 0;
	}
	pipes_output_written((size_t)n);
	queue_output_piped((size_t)n);
	return 0;
}

/* Write what replies are ready; 1 if some remain (stdout is full). */
static int write_output(void)
{
	struct iovec iov[MAX_IOV];
	size_t len;
	ssize_t n;
	int cnt, fd;

	for (;;) {
		if (output_gone) {
			drop_output();
			return 0;
		}
		queue_output_consumed(0); /* drops requests with no reply */
		if ((fd = queue_output_pipe(&len)) >= 0) {
			if (splice_output(fd, len))
				return 1;
			continue;
		}
		if ((cnt = queue_output_iov(iov, MAX_IOV)) == 0)
			return 0;
		n = writev(STDOUT_FILENO, iov, cnt);
		if (n == -1 && errno == EINTR)
			continue;
		if (n == -1 && errno == EAGAIN)
			return 1;
		if (n <= 0) {
			output_failed(n);
			continue;
		}
		pipes_output_written((size_t)n);
		queue_output_consumed((size_t)n);
	}
}

static int reap_completions(void)
{
	int rc = io_reap_ready();

	if (rc < 0)
		fatal_exit(1, "I/O completion: %s", strerror(-rc));
	return rc;
}

/* Bytes wait in stdin now: reading them costs no sleep. */
static int input_waiting(void)
{
	int avail = 0;

	return ioctl(STDIN_FILENO, FIONREAD, &avail) == 0 && avail > 0;
}

/* More requests are about to arrive: bytes wait in stdin and we will
 * read and frame them next turn.  Merged writes may wait for those. */
static int more_input_ready(void)
{
	size_t room;

	if (!coalesce_pending() || input_eof || input_stop ||
	    !queue_has_room() || input_room(&room) == NULL)
		return 0;
	return input_waiting();
}

static int finished(void)
{
	if (!queue_idle())
		return 0;
	if (queue_fatal_status() != 0 || input_stop)
		return 1;
	return input_eof && !complete_packet_waiting();
}

/* Read stdin this turn?  While a full stdout still has a backlog of
 * replies, new requests could not be answered any sooner, and sleeping
 * until each one arrives (the client sends one per reply it reads) costs
 * a sleep and a wake-up apiece.  So then stdin is read only when bytes
 * already wait in it, and otherwise looked at again within 10 ms (*held):
 * a client blocked writing to us may be waiting for that before it reads
 * what we wrote. */
static int want_input(int out_blocked, int *held)
{
	size_t room;

	*held = 0;
	if (input_eof || input_stop || input_room(&room) == NULL)
		return 0;
	if (!out_blocked || queue_output_bytes() < OUTPUT_BACKLOG)
		return 1;
	*held = 1;
	return input_waiting();
}

/* Sleep until there is something to do: input to read, room in stdout,
 * I/O completions, the end of a paced pause or of a wait for stdout's
 * reader.  Clears *out_blocked when stdout should be tried again.  Spare
 * splice pipes are closed after a second with nothing to do. */
static void wait_for_events(int *out_blocked)
{
	struct pollfd pfd[3];
	struct timespec pause, *timeout = NULL;
	int nfds = 0, ring_fd, paced = 0, held, idle, rc, i;
	int64_t wait_ns = queue_waiting_for_reader() ? 1000000 : -1, pace;

	if (want_input(*out_blocked, &held))
		pfd[nfds++] = (struct pollfd){STDIN_FILENO, POLLIN, 0};
	if (held && (wait_ns < 0 || wait_ns > HELD_INPUT_RECHECK_NS))
		wait_ns = HELD_INPUT_RECHECK_NS;
	if (*out_blocked) {
		pace = stdout_pace_wait(pipes_output_total());
		if (pace == 0)
			pfd[nfds++] =
			    (struct pollfd){STDOUT_FILENO, POLLOUT, 0};
		else if (wait_ns < 0 || pace < wait_ns) {
			wait_ns = pace;
			paced = 1;
		}
	}
	if (backend->in_flight() > 0) {
		ring_fd = backend->completion_fd();
		if (ring_fd >= 0)
			pfd[nfds++] = (struct pollfd){ring_fd, POLLIN, 0};
		else
			wait_ns = 0;
	}
	idle = wait_ns < 0 && queue_idle() && pipes_have_spares();
	if (idle)
		wait_ns = SPARE_PIPES_IDLE_NS;
	if (wait_ns >= 0) {
		pause.tv_sec = wait_ns / 1000000000;
		pause.tv_nsec = wait_ns % 1000000000;
		timeout = &pause;
	}
	rc = ppoll(pfd, (nfds_t)nfds, timeout, NULL);
	if (rc == -1) {
		if (errno == EINTR)
			return;
		error("poll: %s", strerror(errno));
		cleanup_exit(2);
	}
	if (rc == 0 && idle)
		pipes_release_spares();
	if (paced && stdout_pace_woke())
		*out_blocked = 0;
	for (i = 0; i < nfds; i++) {
		if (pfd[i].revents == 0)
			continue;
		if (pfd[i].fd == STDIN_FILENO)
			read_input();
		else if (pfd[i].fd == STDOUT_FILENO)
			*out_blocked = 0; /* room, or an error to see */
	}
}

static void serve(void)
{
	int out_blocked = 0, reaped;
	unsigned before;

	for (;;) {
		frame_input();
		queue_dispatch(more_input_ready());
		/* What the back end did at once (writes; everything, for the
		 * plain one) is answered this turn. */
		reaped = reap_completions();
		/* A full stdout is tried again only once poll says it has
		 * room, or after a paced pause. */
		if (!out_blocked) {
			before = queue_count();
			out_blocked = write_output();
			/* Replies that went out may have made room for input
			 * already read, or unblocked a request: go round before
			 * sleeping. */
			if (queue_count() < before)
				continue;
		}
		/* So may completions. */
		if (reaped > 0)
			continue;
		if (finished())
			break;
		wait_for_events(&out_blocked);
	}
	if (queue_fatal_status() != 0)
		fatal_exit(queue_fatal_status(), "%s", queue_fatal_message());
	if (exit_fatal != NULL)
		fatal_exit(exit_status, "%s", exit_fatal);
	cleanup_exit(exit_status);
}

int main(int argc, char **argv)
{
	struct queue_limits limits;
	struct passwd *pw;
	const char *progname;
	int rc;

	sanitise_stdfd();
	closefrom(STDERR_FILENO + 1);
	progname = strrchr(argv[0], '/') ? strrchr(argv[0], '/') + 1 : argv[0];
	log_init(progname, LOG_LEVEL_ERROR, LOG_AUTH, 0);
	if ((pw = getpwuid(getuid())) == NULL) {
		fprintf(stderr, "No user found for uid %lu\n",
		        (unsigned long)getuid());
		return 1;
	}
	srv.user = strdup(pw->pw_name);
	srv.home = strdup(pw->pw_dir);
	if (parse_options(&srv.opt, argc, argv, srv.user, srv.home,
	                  (unsigned long)pw->pw_uid) == OPTIONS_EXIT_OK)
		return 0;
	log_init(progname, srv.opt.log_level, srv.opt.log_facility,
	         srv.opt.log_stderr);
	log_set_cleanup(log_cleanup);
	/* Keep other processes of this user out of our memory. */
	if (prctl(PR_SET_DUMPABLE, 0) != 0)
		fatal_exit(255, "unable to make the process undumpable: %s",
		           strerror(errno));
	srv.client_addr = client_address();
	logit("session opened for local user %s from [%s]", srv.user,
	      srv.client_addr);
	if (srv.opt.start_dir != NULL && chdir(srv.opt.start_dir) != 0)
		error("chdir to \"%s\" failed: %s", srv.opt.start_dir,
		      strerror(errno));

	/* READ buffers of up to 255 KiB come and go all the time; above
	 * glibc's default mmap threshold each would be a fresh mmap, zeroed
	 * page by page.  Keep them in the heap for reuse instead. */
	mallopt(M_MMAP_THRESHOLD, 1024 * 1024);
	mallopt(M_TRIM_THRESHOLD, 32 * 1024 * 1024);
	signal(SIGPIPE, SIG_IGN);
	set_handle_limit();
	tune_stdio(STDIN_FILENO);
	tune_stdio(STDOUT_FILENO);
	stdout_pace_init(STDOUT_FILENO);
	if ((rc = backend_start(srv.opt.backend, srv.opt.queue_depth)) != 0)
		fatal_exit(1, "cannot start the %s back end: %s",
		           srv.opt.backend == BACKEND_URING ? "io_uring"
		                                            : "plain",
		           strerror(-rc));
	limits.max_requests = srv.opt.queue_depth;
	limits.max_reply_bytes = MAX_REPLY_BYTES;
	queue_init(&limits);
	coalesce_init(srv.opt.write_merge);
	setup_splice();
	if (input_init(INPUT_CHUNK, INPUT_CHUNKS) != 0)
		fatal_exit(1, "out of memory");
	serve();
	return 0;
}
