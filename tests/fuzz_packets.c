/* SPDX-License-Identifier: ISC
 * Copyright (c) 2026 The uring-sftp-server developers.  See LICENSE. */
/*
 * libFuzzer target for the whole packet path, in-process: the chunked
 * input buffer, framing, decoding, the handler table, every handler, the
 * queue with its ordering rules, write merging, the plain back end, READ
 * replies built in READ memory, and reply output.
 *
 * Each input is a byte stream exactly as a client writes it to the
 * server's stdin.  The loop is the server's own (session.c and output.c,
 * as main runs them): stdin and stdout are operation tables here, the
 * input arriving in reads of varied sizes, replies leaving through
 * "stdout" (a pipe the target reads back, sometimes late) in writes of
 * varied sizes.  For some inputs (chosen by a hash of the
 * input) stdout's reader vanishes after a number of writes, or a write
 * fails with EIO.  The session runs until it says it is over.  Between
 * inputs every handle is closed, the queue reset and the work directory
 * emptied.

 * Besides ASan, UBSan and LSan, the target itself aborts (= a crash
 * libFuzzer reports) when:
 *   - fatal_exit() is reached: within the packet path that only happens
 *     when a reply could not be encoded or memory ran out, which is a bug;
 *     client errors end in the queue's fatal status instead;
 *   - a reply is malformed, longer than 256 KiB, answers a request that
 *     is not the next one expecting a reply, or a request that expects a
 *     reply gets none (replies leave in arrival order, exactly once);
 *   - nothing moves (no input framed, no request done, no byte in or out)
 *     for many turns while requests are still waiting (a stall), or the
 *     session would sleep with nothing that could wake it;
 *   - a write is tried after the reader was seen leaving, or a failed
 *     write does not end the session with status 1;
 *   - a descriptor is still open after all handles were closed, or one
 *     the input did not open was closed.
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
 * FUZZ_LOG=1.
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
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <sys/wait.h>
#include <syslog.h>
#include <time.h>
#include <unistd.h>

#include "backend.h"
#include "io.h"
#include "buf.h"
#include "coalesce.h"
#include "handle.h"
#include "handlers.h"
#include "input.h"
#include "log.h"
#include "output.h"
#include "readmem.h"
#include "workers.h"
#include "queue.h"
#include "server.h"
#include "session.h"
#include "sftp.h"

/* As sftp-server.c. */
#define INPUT_CHUNK (1024 * 1024)
#define INPUT_CHUNKS 16
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

/* The argument vector fix_arguments made: for the life of the process,
 * held here so that LeakSanitizer, run when a -jobs worker exits after
 * libFuzzer's own copy of the pointer is gone, sees it is still in use. */
static char **fixed_args;

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
	*argv = fixed_args = args;
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
 * (libFuzzer may open descriptors between inputs, e.g. pipes to the
 * symbolizer: pipes that were not open before are not ours.)
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
	int fd;
	ssize_t n;

	snapshot_fds(after);
	for (fd = 0; fd < FD_SCAN; fd++) {
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
/* The server's own loop (session.c, output.c), with "stdin" the fuzz
 * data and "stdout" a pipe the target reads back.  Both are operation
 * tables that move bytes in pieces of varied sizes; for some inputs the
 * reader vanishes after a number of writes, or a write fails. */

static const uint8_t *in_data; /* the fuzz input, "stdin" */
static size_t in_size, in_off;
static uint64_t rng;
static uint64_t progress; /* changes whenever something moved */
static int vanish_after;  /* writes before the reader leaves; -1 never */
static int fail_after;    /* writes before one fails with EIO; -1 never */
static int vanished, failed;
static int64_t fake_now; /* the session's clock: only timeouts move it */

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

/* The requests the server will frame, as its framer cuts them: whole
 * packets up to the end, or to a length of 0 or past the maximum. */
static void note_requests(void)
{
	size_t off = 0;
	uint32_t len;

	while (in_size - off >= 4) {
		len = peek_u32(in_data + off);
		if (len == 0 || len > SFTP_MAX_MSG_LENGTH ||
		    in_size - off - 4 < len)
			break;
		note_sent(in_data + off + 4, len);
		off += 4 + (size_t)len;
	}
}

static ssize_t fuzz_read(void *buf, size_t room)
{
	size_t n = io_size();

	if (in_off == in_size)
		return 0;
	if (n > room)
		n = room;
	if (n > in_size - in_off)
		n = in_size - in_off;
	memcpy(buf, in_data + in_off, n);
	in_off += n;
	progress++;
	return (ssize_t)n;
}

static size_t fuzz_waiting(void)
{
	return in_size - in_off;
}

/* never_blocks NULL: held input is looked at with fuzz_waiting first. */
static const struct input_ops fuzz_in = {fuzz_read, fuzz_waiting, NULL};

/* The client reads what reached "stdout" (and, once it has vanished,
 * throws it away: replies may end anywhere then). */
static void read_output(void)
{
	uint8_t buf[65536];
	ssize_t n;

	while ((n = read(out_rd, buf, sizeof(buf))) > 0) {
		if (!vanished && !failed)
			parse_output(buf, (size_t)n);
		progress++;
	}
	if (n == -1 && errno != EAGAIN)
		bug("read from the output pipe: %s", strerror(errno));
}

/* Before each write: does the reader leave, or the write fail? */
static int write_fails(void)
{
	if (vanished)
		bug("a write after stdout's reader was seen leaving");
	if (vanish_after >= 0 && vanish_after-- == 0) {
		vanished = 1;
		errno = EPIPE;
		return 1;
	}
	if (fail_after >= 0 && fail_after-- == 0) {
		failed = 1;
		errno = EIO;
		return 1;
	}
	return 0;
}

static ssize_t after_write(ssize_t n)
{
	if (n == 0)
		bug("a write to the output pipe moved nothing");
	if (n == -1 && errno != EAGAIN)
		bug("write to the output pipe: %s", strerror(errno));
	if (n > 0)
		progress++;
	/* Sometimes the client is slow to read. */
	if (next_random(4) != 0)
		read_output();
	return n;
}

static ssize_t fuzz_writev(const struct iovec *iov, int cnt)
{
	struct iovec part[64];
	size_t budget = io_size(), sum = 0;
	int i;

	if (write_fails())
		return -1;
	if (cnt > 64)
		cnt = 64;
	for (i = 0; i < cnt; i++) {
		part[i] = iov[i];
		if (part[i].iov_len > budget - sum) {
			part[i].iov_len = budget - sum;
			cnt = i + 1;
			break;
		}
		sum += part[i].iov_len;
	}
	return after_write(writev(out_wr, part, cnt));
}

static int64_t fuzz_unread(void)
{
	int n = 0;

	return ioctl(out_rd, FIONREAD, &n) == 0 ? n : -1;
}

static const struct output_ops fuzz_out = {
    .writev = fuzz_writev, .unread = fuzz_unread, .resize = NULL};

/* What the server would sleep on, and what would wake it: input and
 * completions are always there at once, room in stdout once the client
 * has read, its reader's leaving as soon as it happened.  Else the time
 * runs out (and a client waiting for replies reads them meanwhile). */
static void sleep_and_wake(void)
{
	struct session_wait w;
	struct session_events ev = {0};

	session_plan(&w, fake_now);
	if (w.input)
		ev.input = 1;
	if (w.watch_output && vanished)
		ev.output_error = 1;
	if (w.output) {
		read_output();
		ev.output = 1;
	}
	if (w.completion_fd >= 0)
		bug("the plain back end has no completion descriptor");
	if (!ev.input && !ev.output && !ev.output_error) {
		if (w.timeout_ns < 0 && !w.watch_output)
			bug("asleep for ever: nothing to wait for");
		ev.timed_out = w.timeout_ns >= 0;
		fake_now += w.timeout_ns > 0 ? w.timeout_ns : 1000000;
		if (!vanished)
			read_output();
	}
	session_wake(&ev, fake_now);
}

/* After the session: whatever a failed write left in flight is finished,
 * so the next input starts from nothing. */
static void settle(void)
{
	int rc;

	coalesce_flush();
	backend->flush();
	while (backend->in_flight() > 0)
		if ((rc = io_reap_ready()) < 0)
			bug("I/O completion: %s", strerror(-rc));
}

static size_t unframed(void)
{
	size_t avail;

	input_data(&avail);
	return avail;
}

static uint64_t input_hash(const uint8_t *data, size_t size)
{
	uint64_t h = 1469598103934665603ULL;
	size_t i;

	for (i = 0; i < size; i++)
		h = (h ^ data[i]) * 1099511628211ULL;
	return h;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	unsigned before, spins = 0;
	uint64_t seen;
	size_t avail, framed;
	int step;

	snapshot_fds(fds_before);
	in_data = data;
	in_size = size;
	in_off = 0;
	rng = input_hash(data, size);
	vanish_after = next_random(8) == 0 ? (int)next_random(24) : -1;
	fail_after = next_random(16) == 0 ? (int)next_random(24) : -1;
	vanished = failed = 0;
	fake_now = 1000000000;
	num_sent = next_expected = 0;
	out_hdr_len = 0;
	out_skip = 0;
	note_requests();
	output_init(&fuzz_out, 0);
	session_init(&fuzz_in);
	for (;;) {
		seen = progress;
		before = queue_count();
		framed = unframed();
		step = session_turn();
		if (step == SESSION_DONE)
			break;
		if (step == SESSION_WAIT)
			sleep_and_wake();
		/* Many turns in a row without anything moving (input framed,
		 * requests done, bytes in or out; the client reads all it is
		 * sent meanwhile) mean the server is stuck. */
		if (progress == seen && queue_count() == before &&
		    unframed() == framed) {
			if (++spins > 64)
				bug("stall: %u requests, %zu reply bytes, "
				    "%zu input bytes left, %zu unframed, "
				    "room %d, idle %d, fatal %d, nothing moves",
				    queue_count(), queue_output_bytes(),
				    in_size - in_off, unframed(),
				    queue_has_room(), queue_idle(),
				    queue_fatal_status());
		} else {
			spins = 0;
		}
	}
	settle();
	read_output();
	if (!vanished && !failed)
		check_all_answered();
	else if (failed && session_exit_status(&(const char *){NULL}) != 1)
		bug("a failed write did not end the session with status 1");
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
	/* One thread and a reproducible order: workers' jobs run at once. */
	workers_run_inline(1);
	if ((rc = backend_start(BACKEND_PLAIN, FUZZ_QUEUE_DEPTH)) != 0)
		bug("backend_start: %s", strerror(-rc));
	queue_init(&limits);
	coalesce_init(srv.opt.write_merge);
	if (input_init(INPUT_CHUNK, INPUT_CHUNKS) != 0 ||
	    readmem_init(FUZZ_QUEUE_DEPTH) != 0)
		bug("input_init or readmem_init failed");
	/* "stdout": a pipe, as Debian's sshd gives it. */
	if (pipe2(out, O_CLOEXEC | O_NONBLOCK) == -1)
		bug("pipe2: %s", strerror(errno));
	out_rd = out[0];
	out_wr = out[1];
	(void)fcntl(out_wr, F_SETPIPE_SZ, 1024 * 1024);
	reset_session();
	return 0;
}
