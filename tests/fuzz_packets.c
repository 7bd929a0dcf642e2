/*
 * libFuzzer target for the whole packet path, in-process: the chunked
 * input buffer, framing, decoding, the handler table, every handler, the
 * queue with its ordering rules, write merging, the plain back end, READ
 * replies spliced through the pipe pool, and reply output.
 *
 * Each input is a byte stream exactly as a client writes it to the
 * server's stdin.  The loop is sftp-server.c's serve(): the input arrives
 * in reads of varied sizes, is cut into packets as frame_input() does (a
 * length over 262144 or of 0 ends the session, as does the end of the
 * input), admitted while the queue has room, dispatched, completed, and
 * written to "stdout" (a pipe the target reads back, sometimes late) in
 * writes and splices of varied sizes, until the session would end.
 * Between inputs every handle is closed, the queue reset and the work
 * directory emptied.
 *
 * Besides ASan, UBSan and LSan, the target itself aborts (= a crash
 * libFuzzer reports) when:
 *   - fatal_exit() is reached: within the packet path that only happens
 *     when a reply could not be encoded or memory ran out, which is a bug;
 *     client errors end in the queue's fatal status instead;
 *   - a reply is malformed, longer than 256 KiB, answers a request that
 *     is not the next one expecting a reply, or a request that expects a
 *     reply gets none (replies leave in arrival order, exactly once);
 *   - nothing moves while requests are still waiting (a stall);
 *   - a descriptor is still open after all handles were closed, or one
 *     the input did not open was closed (the splice pipe pool excepted,
 *     which only has to stay within its size).
 *
 * Safety: the handlers do real file system calls with whatever paths the
 * fuzzer invents, often as root.  Before the first input the target moves
 * into its own mount namespace (a user namespace too when not root), makes
 * every mount read-only there, and works in a private 64 MiB tmpfs.  Only
 * the directories libFuzzer writes to (the first corpus directory, the
 * artifact directory, the current directory) stay writable.  If that
 * sandbox cannot be set up, the target refuses to run (exit 77) unless
 * FUZZ_NO_SANDBOX=1.  Relative corpus and artifact paths are made absolute
 * so they survive the chdir into the work directory.
 *
 * Build and run it with `make fuzz` (FUZZ_SECONDS, default 60); replay a
 * crash with `tests/fuzz_packets crash-FILE`.  The server's log (level
 * FUZZ_LOG_LEVEL, default INFO) goes to /dev/null, or to stderr with
 * FUZZ_LOG=1; FUZZ_NO_SPLICE=1 copies READ data instead of splicing it
 * (as --no-splice).
 */
#include "config.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <limits.h>
#include <sched.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <sys/wait.h>
#include <syslog.h>
#include <time.h>
#include <unistd.h>

#include "backend.h"
#include "buf.h"
#include "coalesce.h"
#include "handle.h"
#include "handlers.h"
#include "input.h"
#include "log.h"
#include "pipes.h"
#include "queue.h"
#include "server.h"
#include "sftp.h"

/* As sftp-server.c. */
#define INPUT_CHUNK (1024 * 1024)
#define INPUT_CHUNKS 16
#define MAX_REPLY_PACKET (SFTP_MAX_MSG_LENGTH + 1024)
#define WRITE_MERGE (256 * 1024)
/* Small bounds, so back-pressure paths run often. */
#define FUZZ_QUEUE_DEPTH 16
#define FUZZ_REPLY_BYTES (1024 * 1024)
#define FUZZ_HANDLES 64
#define FUZZ_TMPFS "size=64m,nr_inodes=8192,mode=0700"
#define MAX_WRITABLE 64

/* Our own struct mount_attr: <linux/mount.h> clashes with <sys/mount.h>. */
struct fuzz_mount_attr {
	uint64_t attr_set;
	uint64_t attr_clr;
	uint64_t propagation;
	uint64_t userns_fd;
};
#define FUZZ_MOUNT_ATTR_RDONLY 0x00000001
#ifndef AT_RECURSIVE
#define AT_RECURSIVE 0x8000
#endif
#ifndef SYS_mount_setattr
#define SYS_mount_setattr 442
#endif

static char work_dir[PATH_MAX];
static int work_fd = -1;
static int out_rd = -1, out_wr = -1; /* "stdout" and its reader */
static char *writable[MAX_WRITABLE];
static int num_writable;

static void empty_dir(const char *dir);

/* ------------------------------------------------------------------ */
/* Failing loudly. */

static void __attribute__((noreturn, format(printf, 1, 2)))
bug(const char *fmt, ...)
{
	va_list ap;

	fprintf(stderr, "fuzz_packets: ");
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fprintf(stderr, "\n");
	abort();
}

static void fatal_hook(int status)
{
	bug("fatal_exit(%d) reached from the packet path "
	    "(run with FUZZ_LOG=1 for its message)",
	    status);
}

/* ------------------------------------------------------------------ */
/* The sandbox. */

static void add_writable(const char *path)
{
	char *abs;

	if (num_writable >= MAX_WRITABLE)
		bug("too many writable directories");
	if ((abs = realpath(path, NULL)) == NULL)
		bug("realpath %s: %s", path, strerror(errno));
	writable[num_writable++] = abs;
}

static int write_file(const char *path, const char *text)
{
	int fd = open(path, O_WRONLY | O_CLOEXEC);
	ssize_t n;

	if (fd == -1)
		return -1;
	n = write(fd, text, strlen(text));
	close(fd);
	return n == (ssize_t)strlen(text) ? 0 : -1;
}

static int enter_namespaces(void)
{
	char map[64];
	uid_t uid = getuid();
	gid_t gid = getgid();

	if (uid == 0)
		return unshare(CLONE_NEWNS);
	if (unshare(CLONE_NEWUSER | CLONE_NEWNS) == -1)
		return -1;
	snprintf(map, sizeof(map), "0 %lu 1", (unsigned long)uid);
	if (write_file("/proc/self/uid_map", map) == -1 ||
	    write_file("/proc/self/setgroups", "deny") == -1)
		return -1;
	snprintf(map, sizeof(map), "0 %lu 1", (unsigned long)gid);
	return write_file("/proc/self/gid_map", map);
}

static int set_readonly(const char *path, int recursive, int ro)
{
	struct fuzz_mount_attr attr = {0};

	if (ro)
		attr.attr_set = FUZZ_MOUNT_ATTR_RDONLY;
	else
		attr.attr_clr = FUZZ_MOUNT_ATTR_RDONLY;
	return (int)syscall(SYS_mount_setattr, AT_FDCWD, path,
	                    recursive ? AT_RECURSIVE : 0, &attr, sizeof(attr));
}

/* Returns NULL, or the step that failed. */
static const char *sandbox(void)
{
	int i;

	if (enter_namespaces() == -1)
		return "unshare";
	if (mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) == -1)
		return "mount --make-rprivate /";
	for (i = 0; i < num_writable; i++)
		if (mount(writable[i], writable[i], NULL, MS_BIND, NULL) == -1)
			return "bind mount";
	if (mount("fuzz-sftp", work_dir, "tmpfs", MS_NOSUID | MS_NODEV,
	          FUZZ_TMPFS) == -1)
		return "mount tmpfs";
	if (set_readonly("/", 1, 1) == -1)
		return "mount_setattr read-only";
	for (i = 0; i < num_writable; i++)
		if (set_readonly(writable[i], 0, 0) == -1)
			return "mount_setattr read-write";
	if (set_readonly(work_dir, 0, 0) == -1)
		return "mount_setattr read-write";
	return NULL;
}

static pid_t child;

static void forward_signal(int sig)
{
	if (child > 0)
		kill(child, sig);
}

/*
 * Outside the sandbox a parent waits for the fuzzer and then removes the
 * (by then empty) mount point, which is read-only from inside.
 */
static void split_off_fuzzer(void)
{
	int status;

	if ((child = fork()) == -1)
		bug("fork: %s", strerror(errno));
	if (child == 0) {
		prctl(PR_SET_PDEATHSIG, SIGKILL);
		return;
	}
	signal(SIGINT, forward_signal);
	signal(SIGTERM, forward_signal);
	signal(SIGHUP, forward_signal);
	while (waitpid(child, &status, 0) == -1)
		if (errno != EINTR)
			bug("waitpid: %s", strerror(errno));
	/* Empty unless the fuzzer ran unsandboxed. */
	empty_dir(work_dir);
	rmdir(work_dir);
	if (WIFSIGNALED(status)) {
		signal(WTERMSIG(status), SIG_DFL);
		raise(WTERMSIG(status));
	}
	_exit(WIFEXITED(status) ? WEXITSTATUS(status) : 1);
}

/*
 * libFuzzer runs itself again for -minimize_crash, -merge and -fork; such
 * a child inherits the sandbox and only needs a fresh tmpfs of its own.
 */
static const char *nested_sandbox(void)
{
	if (unshare(CLONE_NEWNS) == -1)
		return "unshare";
	if (mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) == -1)
		return "mount --make-rprivate /";
	if (mount("fuzz-sftp", work_dir, "tmpfs", MS_NOSUID | MS_NODEV,
	          FUZZ_TMPFS) == -1)
		return "mount tmpfs";
	return NULL;
}

/* A flag whose value names a file libFuzzer writes (prefix: a name
 * prefix): rewrite it with an absolute directory and make that directory
 * writable. */
static char *absolute_output(const char *flag, const char *val)
{
	const char *slash = strrchr(val, '/');
	char *dir, *abs, *out;

	dir = slash != NULL ? strndup(val, (size_t)(slash - val) + 1)
	                    : strdup(".");
	if (dir == NULL)
		bug("out of memory");
	if ((abs = realpath(dir, NULL)) == NULL)
		bug("%s%s: %s", flag, val, strerror(errno));
	add_writable(abs);
	if (asprintf(&out, "%s%s/%s", flag, abs,
	             slash != NULL ? slash + 1 : val) < 0)
		bug("out of memory");
	free(dir);
	free(abs);
	return out;
}

static int has_prefix(const char *s, const char *prefix)
{
	return strncmp(s, prefix, strlen(prefix)) == 0;
}

/* Make the paths libFuzzer will use absolute (we chdir away) and note the
 * directories it writes to. */
static void fix_arguments(int *argc, char ***argv)
{
	char **args, cwd[PATH_MAX], *val, *abs;
	int i, n = 0, have_prefix = 0, have_dir = 0;
	struct stat st;

	if (getcwd(cwd, sizeof(cwd)) == NULL)
		bug("getcwd: %s", strerror(errno));
	add_writable(cwd);
	if ((args = calloc((size_t)*argc + 2, sizeof(*args))) == NULL)
		bug("out of memory");
	args[n++] = (*argv)[0];
	for (i = 1; i < *argc; i++) {
		val = (*argv)[i];
		if (has_prefix(val, "-artifact_prefix=")) {
			have_prefix = 1;
			args[n++] =
			    absolute_output("-artifact_prefix=", val + 17);
		} else if (has_prefix(val, "-exact_artifact_path=")) {
			args[n++] =
			    absolute_output("-exact_artifact_path=", val + 21);
		} else if (has_prefix(val, "-dict=") && val[6] != '/') {
			if ((abs = realpath(val + 6, NULL)) == NULL ||
			    asprintf(&args[n++], "-dict=%s", abs) < 0)
				bug("%s: %s", val, strerror(errno));
			free(abs);
		} else if (val[0] == '-') {
			args[n++] = val;
		} else {
			/* An input file or a corpus directory: libFuzzer
			 * adds new inputs to the first directory only. */
			if ((abs = realpath(val, NULL)) == NULL)
				bug("%s: %s", val, strerror(errno));
			if (!have_dir && stat(abs, &st) == 0 &&
			    S_ISDIR(st.st_mode)) {
				add_writable(abs);
				have_dir = 1;
			}
			args[n++] = abs;
		}
	}
	if (!have_prefix &&
	    asprintf(&args[n++], "-artifact_prefix=%s/", cwd) < 0)
		bug("out of memory");
	args[n] = NULL;
	*argc = n;
	*argv = args;
}

/* ------------------------------------------------------------------ */
/* Between inputs. */

static int remove_entry(const char *path, const struct stat *st, int flag,
                        struct FTW *ftw)
{
	(void)st;
	if (ftw->level == 0)
		return 0;
	if (flag == FTW_DP || flag == FTW_D || flag == FTW_DNR) {
		if (rmdir(path) == -1)
			bug("rmdir %s: %s", path, strerror(errno));
	} else if (unlink(path) == -1) {
		bug("unlink %s: %s", path, strerror(errno));
	}
	return 0;
}

/* Directories made with mode 0 cannot be listed, even by root in a user
 * namespace: open them up first. */
static int open_up(const char *path, const struct stat *st, int flag,
                   struct FTW *ftw)
{
	(void)ftw;
	if (flag == FTW_D || flag == FTW_DNR)
		(void)chmod(path, st->st_mode | S_IRWXU);
	return 0;
}

/* Remove everything below dir (not dir itself). */
static void empty_dir(const char *dir)
{
	DIR *d;
	struct dirent *e;
	int empty = 1;

	if ((d = opendir(dir)) == NULL)
		bug("opendir %s: %s", dir, strerror(errno));
	while ((e = readdir(d)) != NULL)
		if (strcmp(e->d_name, ".") != 0 && strcmp(e->d_name, "..") != 0)
			empty = 0;
	closedir(d);
	if (empty)
		return;
	(void)chmod(dir, 0700);
	nftw(dir, open_up, 16, FTW_PHYS | FTW_MOUNT);
	if (nftw(dir, remove_entry, 16, FTW_DEPTH | FTW_PHYS | FTW_MOUNT) != 0)
		bug("cannot empty %s", dir);
}

/*
 * Descriptors open before and after an input must be the same ones: a new
 * one is a leak, a missing one was closed by someone who did not own it.
 * The exception is the pool of splice pipes, which grows on demand, keeps
 * empty pipes and closes full ones: only its size is bounded.  (libFuzzer
 * may open descriptors between inputs, e.g. pipes to the symbolizer.)
 */
#define FD_SCAN 1024

/* Per descriptor: 0 closed, 1 open, 2 an open pipe. */
static unsigned char fds_before[FD_SCAN];

/* /proc/self/fd lists the open ones in one system call or two. */
static void snapshot_fds(unsigned char *state)
{
	struct dirent *e;
	struct stat st;
	DIR *d;
	int fd;

	memset(state, 0, FD_SCAN);
	if ((d = opendir("/proc/self/fd")) == NULL)
		bug("/proc/self/fd: %s", strerror(errno));
	while ((e = readdir(d)) != NULL) {
		if (e->d_name[0] == '.')
			continue;
		fd = atoi(e->d_name);
		if (fd == dirfd(d))
			continue;
		if (fd >= FD_SCAN)
			bug("descriptor %d open, more than expected", fd);
		if (fstat(fd, &st) == 0)
			state[fd] = S_ISFIFO(st.st_mode) ? 2 : 1;
	}
	closedir(d);
}

static void check_fds(void)
{
	unsigned char after[FD_SCAN];
	char link[64], target[PATH_MAX];
	int fd, pipes = 0;
	ssize_t n;

	snapshot_fds(after);
	for (fd = 0; fd < FD_SCAN; fd++) {
		/* The pool's pipes are the big ones (not ours, nor the
		 * symbolizer's that libFuzzer may have opened). */
		if (after[fd] == 2 && fd != out_rd && fd != out_wr &&
		    fcntl(fd, F_GETPIPE_SZ) >= 2 * SFTP_MAX_READ_LENGTH)
			pipes++;
		if (after[fd] == fds_before[fd] ||
		    (after[fd] != 1 && fds_before[fd] != 1))
			continue;
		snprintf(link, sizeof(link), "/proc/self/fd/%d", fd);
		n = readlink(link, target, sizeof(target) - 1);
		target[n >= 0 ? n : 0] = '\0';
		bug("descriptor %d %s by the input%s%s", fd,
		    after[fd] == 1 ? "left open" : "closed or replaced",
		    n >= 0 ? ": " : "", target);
	}
	if (pipes > 2 * FUZZ_QUEUE_DEPTH)
		bug("%d pipe descriptors open, more than the pool's %d", pipes,
		    2 * FUZZ_QUEUE_DEPTH);
}

static void reset_session(void)
{
	handle_close_all();
	queue_reset();
	srv.init_done = 0;
	srv.client_version = 0;
	umask(022);
	if (fchdir(work_fd) == -1)
		bug("fchdir: %s", strerror(errno));
	empty_dir(".");
}

/* ------------------------------------------------------------------ */
/* The reply stream: whole packets, in arrival order, one per request. */

struct sent {
	uint32_t id;
	uint8_t type;
};

static struct sent *sent;
static size_t num_sent, sent_cap, next_expected;

static uint8_t out_hdr[9];
static size_t out_hdr_len;
static uint64_t out_skip; /* body bytes after the header still to come */

static int expects_reply(const struct sent *s)
{
	return s->type == SSH2_FXP_INIT || s->type == SSH2_FXP_EXTENDED ||
	       handler_for_type(s->type) != NULL;
}

static void note_sent(const uint8_t *packet, size_t len)
{
	struct sent *grown;

	if (num_sent == sent_cap) {
		sent_cap = sent_cap ? 2 * sent_cap : 256;
		if ((grown = realloc(sent, sent_cap * sizeof(*sent))) == NULL)
			bug("out of memory");
		sent = grown;
	}
	sent[num_sent].type = packet[0];
	sent[num_sent].id = len >= 5 ? peek_u32(packet + 1) : 0;
	num_sent++;
}

static void check_reply(void)
{
	uint32_t len = peek_u32(out_hdr), id = peek_u32(out_hdr + 5);
	uint8_t type = out_hdr[4];
	const struct sent *s;

	if (len > SFTP_MAX_MSG_LENGTH)
		bug("reply of %u bytes, more than a client accepts", len);
	if (len < 5)
		bug("reply of %u bytes", len);
	while (next_expected < num_sent && !expects_reply(&sent[next_expected]))
		next_expected++;
	if (next_expected == num_sent)
		bug("reply type %u id %u answers no request", type, id);
	s = &sent[next_expected++];
	if (type == SSH2_FXP_VERSION) {
		if (s->type != SSH2_FXP_INIT)
			bug("VERSION answers request type %u", s->type);
		return;
	}
	if (s->type == SSH2_FXP_INIT)
		bug("reply type %u answers INIT", type);
	if (type < SSH2_FXP_STATUS ||
	    (type > SSH2_FXP_ATTRS && type != SSH2_FXP_EXTENDED_REPLY))
		bug("reply of unknown type %u", type);
	if (id != s->id)
		bug("reply id %u out of order: request %zu has id %u", id,
		    next_expected - 1, s->id);
	if (type == SSH2_FXP_STATUS && len < 9)
		bug("STATUS reply of %u bytes", len);
}

static void parse_output(const uint8_t *p, size_t n)
{
	size_t take;

	while (n > 0) {
		if (out_skip > 0) {
			take = out_skip < n ? (size_t)out_skip : n;
			out_skip -= take;
			p += take;
			n -= take;
			continue;
		}
		take = sizeof(out_hdr) - out_hdr_len;
		if (take > n)
			take = n;
		memcpy(out_hdr + out_hdr_len, p, take);
		out_hdr_len += take;
		p += take;
		n -= take;
		if (out_hdr_len < sizeof(out_hdr))
			continue;
		check_reply();
		out_skip = peek_u32(out_hdr) - 5;
		out_hdr_len = 0;
	}
}

static void check_all_answered(void)
{
	if (out_hdr_len != 0 || out_skip != 0)
		bug("output ends inside a reply");
	if (queue_fatal_status() != 0)
		return; /* the rest was dropped, as OpenSSH drops it */
	while (next_expected < num_sent && !expects_reply(&sent[next_expected]))
		next_expected++;
	if (next_expected != num_sent)
		bug("request %zu (type %u id %u) got no reply", next_expected,
		    sent[next_expected].type, sent[next_expected].id);
}

/* ------------------------------------------------------------------ */
/* The event loop of sftp-server.c, with the input taken from the fuzz
 * data and "stdout" a pipe the target reads back. */

static const uint8_t *in_data; /* the fuzz input, "stdin" */
static size_t in_size, in_off;
static int input_eof, input_stop;
static uint64_t rng;
static uint64_t progress; /* changes whenever something moved */

static unsigned next_random(unsigned n)
{
	rng = rng * 6364136223846793005ULL + 1442695040888963407ULL;
	return (unsigned)((rng >> 33) % n);
}

/* What one read() or write() moves: varied, so that packets arrive in
 * pieces and replies leave in pieces. */
static size_t io_size(void)
{
	switch (next_random(4)) {
	case 0:
		return 1 + next_random(64);
	case 1:
		return 1 + next_random(70000);
	default:
		return SIZE_MAX;
	}
}

static int complete_packet_waiting(void)
{
	size_t avail;
	const uint8_t *p = input_data(&avail);

	return !input_stop && avail >= 4 && avail - 4 >= peek_u32(p);
}

/* read_input() */
static void read_input(void)
{
	size_t room, n;
	uint8_t *buf;

	if (input_eof || input_stop)
		return;
	if (in_off == in_size) {
		input_eof = 1;
		progress++;
		return;
	}
	if ((buf = input_space(&room, input_missing())) == NULL)
		return;
	n = io_size();
	if (n > room)
		n = room;
	if (n > in_size - in_off)
		n = in_size - in_off;
	memcpy(buf, in_data + in_off, n);
	input_added(n);
	in_off += n;
	progress++;
}

/* frame_input(), with the library's framing */
static void frame_input(void)
{
	struct request *req;
	int rc;

	while (!input_stop && queue_has_room()) {
		rc = input_frame(&req, MAX_REPLY_PACKET);
		if (rc == FRAME_NONE)
			break;
		if (rc != FRAME_REQUEST) {
			if (rc == FRAME_NOMEM)
				bug("request_new failed");
			input_stop = 1; /* exit 11 or 255 */
			break;
		}
		note_sent(req->packet, req->packet_len);
		queue_admit(req);
		progress++;
	}
}

static int more_input_ready(void)
{
	size_t room;

	return coalesce_pending() && !input_eof && !input_stop &&
	       queue_has_room() &&
	       input_space(&room, input_missing()) != NULL && in_off < in_size;
}

/* The client reads what reached "stdout". */
static void read_output(void)
{
	uint8_t buf[65536];
	ssize_t n;

	while ((n = read(out_rd, buf, sizeof(buf))) > 0) {
		parse_output(buf, (size_t)n);
		progress++;
	}
	if (n == -1 && errno != EAGAIN)
		bug("read from the output pipe: %s", strerror(errno));
}

/* write_output(): 1 when "stdout" took less than was offered. */
static int write_output(void)
{
	struct iovec iov[64];
	size_t len, budget, sum;
	ssize_t n;
	int cnt, fd, i;

	for (;;) {
		queue_output_consumed(0);
		budget = io_size();
		if ((fd = queue_output_pipe(&len)) >= 0) {
			n = splice(fd, NULL, out_wr, NULL,
			           len < budget ? len : budget,
			           SPLICE_F_MOVE | SPLICE_F_NONBLOCK);
			if (n == -1 && errno == EAGAIN)
				return 1;
			if (n <= 0)
				bug("splice to the output pipe: %s",
				    n == 0 ? "nothing moved" : strerror(errno));
			pipes_output_written((size_t)n);
			queue_output_piped((size_t)n);
		} else {
			if ((cnt = queue_output_iov(iov, 64)) == 0)
				return 0;
			for (i = 0, sum = 0; i < cnt; i++) {
				if (iov[i].iov_len > budget - sum) {
					iov[i].iov_len = budget - sum;
					cnt = i + 1;
					break;
				}
				sum += iov[i].iov_len;
			}
			n = writev(out_wr, iov, cnt);
			if (n == -1 && errno == EAGAIN)
				return 1;
			if (n <= 0)
				bug("writev to the output pipe: %s",
				    n == 0 ? "nothing moved" : strerror(errno));
			pipes_output_written((size_t)n);
			queue_output_consumed((size_t)n);
		}
		progress++;
		/* Sometimes the client is slow to read. */
		if (next_random(4) != 0)
			read_output();
		if (budget != SIZE_MAX && next_random(3) == 0)
			return 1;
	}
}

static int finished(void)
{
	if (!queue_idle())
		return 0;
	if (queue_fatal_status() != 0 || input_stop)
		return 1;
	return input_eof && !complete_packet_waiting();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	unsigned before, spins = 0;
	uint64_t seen;
	size_t avail;
	int rc;

	snapshot_fds(fds_before);
	in_data = data;
	in_size = size;
	in_off = 0;
	input_eof = input_stop = 0;
	rng = size;
	num_sent = next_expected = 0;
	out_hdr_len = 0;
	out_skip = 0;
	for (;;) {
		seen = progress;
		frame_input();
		queue_dispatch(more_input_ready());
		before = queue_count();
		write_output();
		if (queue_count() < before)
			continue;
		if (finished())
			break;
		read_input();
		if ((rc = io_reap_ready()) < 0)
			bug("I/O completion: %s", strerror(-rc));
		if (rc > 0)
			progress++;
		/* Nothing moved: let the client read everything, as a
		 * client waiting for replies would; many turns in a row
		 * without progress mean the server is stuck. */
		if (progress == seen) {
			read_output();
			if (++spins > 16)
				bug("stall: %u requests, %zu reply bytes, "
				    "%zu input bytes left, nothing moves",
				    queue_count(), queue_output_bytes(),
				    in_size - in_off);
		} else {
			spins = 0;
		}
	}
	read_output();
	check_all_answered();
	/* What the framer left (a packet cut short by the end). */
	input_data(&avail);
	input_take(avail, NULL);
	reset_session();
	check_fds();
	return 0;
}

static void setup_work_dir(void)
{
	const char *tmp = getenv("TMPDIR"), *inherited, *failed, *opt;
	int err;

	if ((inherited = getenv("FUZZ_SANDBOX_DIR")) != NULL) {
		snprintf(work_dir, sizeof(work_dir), "%s", inherited);
		if ((failed = nested_sandbox()) != NULL)
			bug("nested sandbox: %s: %s", failed, strerror(errno));
		return;
	}
	snprintf(work_dir, sizeof(work_dir), "%s/fuzz-sftp.XXXXXX",
	         tmp != NULL && tmp[0] == '/' ? tmp : "/tmp");
	if (mkdtemp(work_dir) == NULL)
		bug("mkdtemp %s: %s", work_dir, strerror(errno));
	split_off_fuzzer();
	if ((failed = sandbox()) == NULL) {
		setenv("FUZZ_SANDBOX_DIR", work_dir, 1);
		return;
	}
	err = errno;
	opt = getenv("FUZZ_NO_SANDBOX");
	if (opt == NULL || strcmp(opt, "1") != 0) {
		fprintf(stderr,
		        "fuzz_packets: cannot set up the sandbox (%s: %s); "
		        "unsandboxed, fuzzed requests would change real files. "
		        "FUZZ_NO_SANDBOX=1 runs anyway.\n",
		        failed, strerror(err));
		exit(77);
	}
	fprintf(stderr, "fuzz_packets: running WITHOUT a sandbox in %s\n",
	        work_dir);
}

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	struct queue_limits limits = {
	    .max_requests = FUZZ_QUEUE_DEPTH,
	    .max_reply_bytes = FUZZ_REPLY_BYTES,
	};
	int log_fd, rc, out[2], level;

	fix_arguments(argc, argv);
	setup_work_dir();
	if ((work_fd = open(work_dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC)) ==
	        -1 ||
	    fchdir(work_fd) == -1)
		bug("%s: %s", work_dir, strerror(errno));

	/* Load what later calls would read lazily, while paths resolve. */
	tzset();

	srv.user = "fuzz";
	srv.home = work_dir;
	srv.client_addr = "UNKNOWN";
	srv.opt.log_facility = LOG_AUTH;
	srv.opt.log_stderr = 1;
	srv.opt.backend = BACKEND_PLAIN;
	srv.opt.queue_depth = FUZZ_QUEUE_DEPTH;
	srv.opt.write_merge = WRITE_MERGE;
	srv.opt.no_splice = getenv("FUZZ_NO_SPLICE") != NULL;
	/* INFO: the transaction log, with the client's names escaped. */
	level = log_level_from_name(getenv("FUZZ_LOG_LEVEL"));
	log_init("fuzz_packets", level >= 0 ? level : LOG_LEVEL_INFO, LOG_AUTH,
	         1);
	if (getenv("FUZZ_LOG") == NULL) {
		if ((log_fd = open("/dev/null", O_WRONLY | O_CLOEXEC)) == -1)
			bug("/dev/null: %s", strerror(errno));
		log_set_stderr_fd(log_fd);
	}
	log_set_cleanup(fatal_hook);
	handle_set_limit(FUZZ_HANDLES);
	if ((rc = backend_start(BACKEND_PLAIN, FUZZ_QUEUE_DEPTH)) != 0)
		bug("backend_start: %s", strerror(-rc));
	queue_init(&limits);
	coalesce_init(srv.opt.write_merge);
	if (input_init(INPUT_CHUNK, INPUT_CHUNKS) != 0)
		bug("input_init failed");
	/* "stdout": a pipe, as Debian's sshd gives it; READ replies are
	 * spliced into it unless FUZZ_NO_SPLICE=1. */
	if (pipe2(out, O_CLOEXEC | O_NONBLOCK) == -1)
		bug("pipe2: %s", strerror(errno));
	out_rd = out[0];
	out_wr = out[1];
	(void)fcntl(out_wr, F_SETPIPE_SZ, 1024 * 1024);
	if (!srv.opt.no_splice && backend->can_splice() &&
	    pipes_init(srv.opt.queue_depth, out_wr) != 0)
		fprintf(stderr, "fuzz_packets: no splicing here\n");
	reset_session();
	return 0;
}
