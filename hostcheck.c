/* SPDX-License-Identifier: ISC
 * Copyright (c) 2026 The uring-sftp-server developers.  See LICENSE. */
/* --check: see hostcheck.h.  The probes first (each a call the server
 * makes itself, or the module's own that it makes), then the decisions
 * and the two formats, which only read the struct. */
#include "config.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <pwd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <sys/utsname.h>
#include <sys/vfs.h>
#include <unistd.h>

#include "confine.h"
#include "hostcheck.h"
#include "json.h"
#include "nocache.h" /* RWF_DONTCACHE */
#include "testkernel.h"

/* ---- the probes ------------------------------------------------------ */

/* The Seccomp: line of /proc/self/status: 0 none, 1 strict, 2 filter. */
static int seccomp_mode(void)
{
	char line[256];
	int mode = -1;
	FILE *f = fopen("/proc/self/status", "re");

	if (f == NULL)
		return -1;
	while (fgets(line, sizeof(line), f) != NULL)
		if (sscanf(line, "Seccomp: %d", &mode) == 1)
			break;
	fclose(f);
	return mode;
}

static int in_group(gid_t gid)
{
	gid_t groups[256];
	int n = getgroups(256, groups), i;

	if (getegid() == gid)
		return 1;
	for (i = 0; i < n; i++)
		if (groups[i] == gid)
			return 1;
	return 0;
}

static void probe_uring(struct hostcheck *h, unsigned depth)
{
	struct rlimit rl;
	unsigned long v;

	/* The back end's own start and operation probe (backend-uring.c),
	 * as --backend=auto makes it, with the ring a session would have
	 * (its size counts against RLIMIT_MEMLOCK on older kernels). */
	if (uring_backend.init(depth) == 0)
		uring_backend.shutdown();
	h->uring = *uring_probed();
	v = read_sysctl("/proc/sys/kernel/io_uring_disabled", ULONG_MAX);
	h->uring_disabled = v > 2 ? -1 : (int)v;
	/* -1, its default, reads as ULONG_MAX: no group. */
	v = read_sysctl("/proc/sys/kernel/io_uring_group", ULONG_MAX);
	h->uring_group = v > (unsigned long)INT_MAX ? -1 : (long)v;
	h->in_uring_group = h->uring_group >= 0 && in_group((gid_t)v);
	h->seccomp = seccomp_mode();
	if (getrlimit(RLIMIT_MEMLOCK, &rl) == 0) {
		h->memlock_unlimited = rl.rlim_cur == RLIM_INFINITY;
		h->memlock = rl.rlim_cur;
	}
}

static void probe_pipes(struct hostcheck *h)
{
	long ps = sysconf(_SC_PAGESIZE);

	h->page_size = ps > 0 ? (unsigned long)ps : 4096;
	pipe_quota_read(&h->pipes, h->page_size);
	/* This process counts as the session it stands for. */
	h->sessions = pipe_quota_sessions();
	pipe_stdio_plan(&h->pipes, h->sessions, h->page_size, &h->plan);
}

/* File system magic numbers (statfs(2)) an administrator may meet. */
static void fs_name(unsigned long magic, char *out, size_t size)
{
	static const struct {
		unsigned long magic;
		const char *name;
	} names[] = {
	    {0xef53, "ext2/3/4"},     {0x58465342, "xfs"},
	    {0x9123683e, "btrfs"},    {0x01021994, "tmpfs"},
	    {0x794c7630, "overlay"},  {0x6969, "nfs"},
	    {0x65735546, "fuse"},     {0x2fc12fc1, "zfs"},
	    {0xf2f52010, "f2fs"},     {0x00c36400, "ceph"},
	    {0xff534d42, "cifs"},     {0xfe534d42, "smb2"},
	    {0xca451a4e, "bcachefs"}, {0x858458f6, "ramfs"},
	    {0x6a656a63, "v9fs"},     {0x73717368, "squashfs"},
	    {0x4d44, "vfat"},         {0x5346544e, "ntfs"},
	    {0x47504653, "gpfs"},     {0x0bd00bd0, "lustre"},
	};
	size_t i;

	for (i = 0; i < sizeof(names) / sizeof(names[0]); i++)
		if (names[i].magic == magic) {
			snprintf(out, size, "%s", names[i].name);
			return;
		}
	snprintf(out, size, "0x%lx", magic);
}

/* A regular file in the current directory the user may read, or -1 with
 * errno (what stopped the first try). */
static int readable_file(int err)
{
	struct dirent *e;
	struct stat st;
	DIR *d = opendir(".");
	int fd = -1;

	/* Never a device or FIFO: an open may do something there. */
	while (d != NULL && fd < 0 && (e = readdir(d)) != NULL)
		if (e->d_type == DT_REG || (e->d_type == DT_UNKNOWN &&
		                            fstatat(AT_FDCWD, e->d_name, &st,
		                                    AT_SYMLINK_NOFOLLOW) == 0 &&
		                            S_ISREG(st.st_mode)))
			fd =
			    open(e->d_name, O_RDONLY | O_NOFOLLOW | O_NONBLOCK |
			                        O_NOCTTY | O_CLOEXEC);
	if (d != NULL)
		closedir(d);
	errno = err;
	return fd;
}

/* A file to probe with in dir (the current directory), as an atomic
 * upload makes one: unnamed (O_TMPFILE), else named and removed at once;
 * where the user may create none, a file there the user may read.  -1
 * with errno. */
static int probe_file(int dir)
{
	char name[] = ".uring-sftp-check.XXXXXX";
	struct stat st;
	int fd = openat(dir, ".", O_TMPFILE | O_RDWR | O_CLOEXEC, 0600);

	if (fd < 0 &&
	    (errno == EOPNOTSUPP || errno == EISDIR || errno == EINVAL) &&
	    (fd = mkostemp(name, O_CLOEXEC)) >= 0)
		(void)unlink(name);
	if (fd >= 0)
		return fd;
	fd = readable_file(errno);
	if (fd >= 0 && (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode))) {
		close(fd);
		errno = EACCES;
		return -1;
	}
	return fd;
}

static void probe_start_dir(struct hostcheck *h)
{
	struct statfs sf;
	struct iovec iov;
	char byte;
	int dir, fd, fl;

	if (getcwd(h->start_dir, sizeof(h->start_dir)) == NULL)
		snprintf(h->start_dir, sizeof(h->start_dir), "(unknown: %s)",
		         strerror(errno));
	if (statfs(".", &sf) == 0)
		fs_name((unsigned long)sf.f_type, h->fs_type,
		        sizeof(h->fs_type));
	else
		snprintf(h->fs_type, sizeof(h->fs_type), "unknown");
	h->direct_err = h->dontcache_err = h->fadvise_err = HC_NOT_PROBED;
	h->upload_way = UPLOAD_WAY_UNKNOWN;
	if ((dir = open(".", O_PATH | O_DIRECTORY | O_CLOEXEC)) < 0) {
		h->probe_file_err = h->tmpfile_err = errno;
		return;
	}
	h->upload_way = upload_probe_way(dir, &h->tmpfile_err);
	fd = probe_file(dir);
	h->probe_file_err = fd < 0 ? errno : 0;
	close(dir);
	if (fd < 0)
		return;
	/* The kernel asks the file system about O_DIRECT at open and at
	 * fcntl alike. */
	fl = fcntl(fd, F_GETFL);
	h->direct_err = fcntl(fd, F_SETFL, fl | O_DIRECT) == 0 ? 0 : errno;
	(void)fcntl(fd, F_SETFL, fl);
	iov.iov_base = &byte;
	iov.iov_len = 1;
	/* A test acting as a kernel before 6.14 (testkernel.h) has the
	 * server take RWF_DONTCACHE as refused, as that kernel would. */
	if (testkernel_before(6, 14))
		h->dontcache_err = EOPNOTSUPP;
	else
		h->dontcache_err =
		    preadv2(fd, &iov, 1, 0, RWF_DONTCACHE) >= 0 ? 0 : errno;
	h->fadvise_err = posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED);
	close(fd);
}

void hostcheck_gather(struct hostcheck *h, unsigned queue_depth,
                      const char *start_dir_asked, int start_dir_err,
                      const char *confine_dir, const char *confine_why)
{
	struct passwd *pw;
	struct utsname u;

	memset(h, 0, sizeof(*h));
	h->uid = (unsigned long)getuid();
	if ((pw = getpwuid((uid_t)h->uid)) != NULL)
		snprintf(h->user, sizeof(h->user), "%s", pw->pw_name);
	else
		snprintf(h->user, sizeof(h->user), "%lu", h->uid);
	if (uname(&u) == 0)
		snprintf(h->kernel, sizeof(h->kernel), "%s", u.release);
	(void)testkernel_acting_as(&h->test_major, &h->test_minor);
	probe_uring(h, queue_depth);
	h->landlock_abi = confine_landlock_abi();
	probe_pipes(h);
	if (start_dir_asked != NULL)
		snprintf(h->start_dir_asked, sizeof(h->start_dir_asked), "%s",
		         start_dir_asked);
	h->start_dir_err = start_dir_err;
	probe_start_dir(h);
	if (confine_dir != NULL) {
		snprintf(h->confine_dir, sizeof(h->confine_dir), "%s",
		         confine_dir);
		(void)confine_dir_usable(confine_dir, h->confine_why,
		                         sizeof(h->confine_why));
	} else {
		snprintf(h->confine_why, sizeof(h->confine_why), "%s",
		         confine_why);
	}
}

/* ---- the decisions ----------------------------------------------------- */

/* The needed operations (those that are no metadata call) the kernel
 * lacks, into out; how many. */
static int missing_needed(const struct hostcheck *h, char *out, size_t size)
{
	size_t i, n = 0;
	int missing = 0;

	out[0] = '\0';
	for (i = 0; i < URING_OPS_USED; i++)
		if (!io_is_meta(uring_ops_used[i].io_op) && !h->uring.has[i]) {
			n += (size_t)snprintf(
			    out + n, n < size ? size - n : 0, "%sIORING_OP_%s",
			    missing ? ", " : "", uring_ops_used[i].name);
			missing++;
		}
	return missing;
}

int hostcheck_uring_usable(const struct hostcheck *h, char *why, size_t size)
{
	char ops[256];
	int err = -h->uring.setup;

	if (err == 0 && !h->uring.listed) {
		snprintf(why, size,
		         "the kernel cannot list io_uring's operations "
		         "(IORING_REGISTER_PROBE)");
		return 0;
	}
	if (err == 0 && missing_needed(h, ops, sizeof(ops)) > 0) {
		snprintf(why, size, "the kernel's io_uring has no %s", ops);
		return 0;
	}
	if (err == 0) {
		snprintf(why, size,
		         "the ring starts and has the operations "
		         "the server needs");
		return 1;
	}
	if (err == EPERM && h->uring_disabled == 2)
		snprintf(why, size,
		         "kernel.io_uring_disabled is 2: io_uring "
		         "is off for every process");
	else if (err == EPERM && h->uring_disabled == 1 && !h->in_uring_group)
		snprintf(why, size,
		         "kernel.io_uring_disabled is 1 and the user is not in "
		         "kernel.io_uring_group (%ld)",
		         h->uring_group);
	else if ((err == EPERM || err == ENOSYS) && h->seccomp == 2)
		snprintf(why, size,
		         "io_uring_setup: %s, under a seccomp filter (as "
		         "Docker's default profile denies io_uring)",
		         strerror(err));
	else if (err == ENOSYS)
		snprintf(why, size, "the kernel has no io_uring_setup (%s)",
		         strerror(err));
	else if (err == ENOMEM && !h->memlock_unlimited)
		snprintf(why, size,
		         "io_uring_setup: %s: the ring does not fit in "
		         "RLIMIT_MEMLOCK (%llu bytes), which kernels before "
		         "5.12 charge it to",
		         strerror(err), h->memlock);
	else
		snprintf(why, size, "io_uring_setup: %s", strerror(err));
	return 0;
}

int hostcheck_confine(const struct hostcheck *h, char *why, size_t size)
{
	if (h->landlock_abi < 0) {
		snprintf(why, size, "Landlock is not available (%s%s)",
		         strerror(-h->landlock_abi),
		         h->landlock_abi == -EOPNOTSUPP
		             ? ": built in, not enabled at boot"
		             : "");
		return 0;
	}
	if (h->confine_why[0] != '\0') {
		snprintf(why, size, "%s", h->confine_why);
		return 0;
	}
	snprintf(why, size, "Landlock ABI %d, confined to \"%s\"",
	         h->landlock_abi, h->confine_dir);
	return 1;
}

int hostcheck_atomic_uploads(const struct hostcheck *h, char *why, size_t size)
{
	switch (h->upload_way) {
	case UPLOAD_WAY_LINK_FD:
		snprintf(why, size, "O_TMPFILE, linked by descriptor");
		return 1;
	case UPLOAD_WAY_LINK_PROC:
		snprintf(why, size, "O_TMPFILE, linked through /proc/self/fd");
		return 1;
	case UPLOAD_WAY_NAMED:
		if (h->tmpfile_err != 0)
			snprintf(why, size,
			         "hidden named temporary files (O_TMPFILE: %s)",
			         strerror(h->tmpfile_err));
		else
			snprintf(why, size,
			         "hidden named temporary files (an O_TMPFILE "
			         "file cannot be linked in here)");
		return 1;
	case UPLOAD_WAY_UNKNOWN:
		break;
	}
	snprintf(why, size, "the start directory takes no new file (%s)",
	         strerror(h->tmpfile_err));
	return 0;
}

int hostcheck_nocache(const struct hostcheck *h, char *why, size_t size)
{
	int memory, n;

	if (h->probe_file_err != 0) {
		snprintf(why, size,
		         "cannot tell: no file to try it on in the start "
		         "directory (%s)",
		         strerror(h->probe_file_err));
		return 0;
	}
	/* tmpfs and ramfs: the page cache is the file, nothing leaves. */
	memory = strcmp(h->fs_type, "tmpfs") == 0 ||
	         strcmp(h->fs_type, "ramfs") == 0;
	if (h->dontcache_err == 0 || h->fadvise_err == 0) {
		if (h->dontcache_err == 0)
			n = snprintf(why, size,
			             "RWF_DONTCACHE on every read and write");
		else
			n = snprintf(why, size,
			             "the server's own way: mincore before it "
			             "reads, POSIX_FADV_DONTNEED behind the "
			             "stream (RWF_DONTCACHE: %s)",
			             strerror(h->dontcache_err));
		if (memory && n > 0 && (size_t)n < size)
			snprintf(
			    why + n, size - (size_t)n,
			    "; on %s nothing is dropped: the page cache is "
			    "the file",
			    h->fs_type);
		return 1;
	}
	snprintf(why, size,
	         "neither RWF_DONTCACHE (%s) nor POSIX_FADV_DONTNEED "
	         "(%s)",
	         strerror(h->dontcache_err), strerror(h->fadvise_err));
	return 0;
}

/* ---- the text report --------------------------------------------------- */

#define WHY_MAX (PATH_MAX + 1024)

static const char *answer(int err, char *buf, size_t size)
{
	if (err == 0)
		return "yes";
	if (err == HC_NOT_PROBED)
		return "not probed (no file to try it on)";
	snprintf(buf, size, "no (%s)", strerror(err));
	return buf;
}

/* s for a terminal: a control character (a newline in a directory's
 * name) as '?', so that every fact stays on its own line. */
static const char *one_line(const char *s, char *out, size_t size)
{
	size_t i;

	for (i = 0; s[i] != '\0' && i + 1 < size; i++)
		out[i] =
		    (unsigned char)s[i] < 0x20 || s[i] == 0x7f ? '?' : s[i];
	out[i] = '\0';
	return out;
}

static void print_option(FILE *f, const char *name, int works, const char *why)
{
	char safe[WHY_MAX];

	fprintf(f, "%-26s %s: %s\n", name, works ? "works" : "would not work",
	        one_line(why, safe, sizeof(safe)));
}

static void text_uring(const struct hostcheck *h, FILE *f)
{
	char why[WHY_MAX];
	size_t i, n;
	int has, usable = hostcheck_uring_usable(h, why, sizeof(why));

	fprintf(f, "%-26s %s: %s\n", "io_uring", usable ? "yes" : "no", why);
	fprintf(f, "%-26s %s\n", "--backend=auto uses",
	        usable ? "io_uring" : "plain system calls");
	fprintf(f, "  %-24s %s\n", "kernel.io_uring_disabled",
	        h->uring_disabled < 0    ? "(none)"
	        : h->uring_disabled == 0 ? "0"
	        : h->uring_disabled == 1 ? "1"
	                                 : "2");
	if (h->uring_disabled == 1)
		fprintf(f, "  %-24s %ld (%s)\n", "kernel.io_uring_group",
		        h->uring_group,
		        h->in_uring_group ? "the user is in it"
		                          : "the user is not in it");
	fprintf(f, "  %-24s %s\n", "seccomp",
	        h->seccomp == 2   ? "a filter"
	        : h->seccomp == 1 ? "strict"
	        : h->seccomp == 0 ? "none"
	                          : "unknown");
	if (h->memlock_unlimited)
		fprintf(f, "  %-24s unlimited\n", "RLIMIT_MEMLOCK");
	else
		fprintf(f, "  %-24s %llu bytes\n", "RLIMIT_MEMLOCK",
		        h->memlock);
	if (h->uring.setup != 0 || !h->uring.listed)
		return;
	for (has = 1; has >= 0; has--) {
		fprintf(f, "  %-24s",
		        has ? "operations" : "operations missing");
		for (i = 0, n = 0; i < URING_OPS_USED; i++)
			if (h->uring.has[i] == has) {
				fprintf(f, " %s", uring_ops_used[i].name);
				n++;
			}
		fprintf(f, "%s\n", n == 0 ? " none" : "");
	}
}

static void text_start_dir(const struct hostcheck *h, FILE *f)
{
	char buf[256], safe[PATH_MAX];

	if (h->start_dir_err != 0)
		fprintf(f,
		        "%-26s chdir to \"%s\" failed (%s): the session "
		        "starts where sshd started it\n",
		        "-d", one_line(h->start_dir_asked, safe, sizeof(safe)),
		        strerror(h->start_dir_err));
	fprintf(f, "%-26s %s (%s)\n", "start directory",
	        one_line(h->start_dir, safe, sizeof(safe)), h->fs_type);
	if (h->probe_file_err != 0)
		fprintf(f, "  %-24s %s\n", "a file to try on",
		        answer(h->probe_file_err, buf, sizeof(buf)));
	fprintf(f, "  %-24s %s\n", "O_TMPFILE",
	        answer(h->tmpfile_err, buf, sizeof(buf)));
	fprintf(f, "  %-24s %s\n", "O_DIRECT",
	        answer(h->direct_err, buf, sizeof(buf)));
	fprintf(f, "  %-24s %s\n", "RWF_DONTCACHE",
	        answer(h->dontcache_err, buf, sizeof(buf)));
	fprintf(f, "  %-24s %s\n", "POSIX_FADV_DONTNEED",
	        answer(h->fadvise_err, buf, sizeof(buf)));
}

void hostcheck_print_text(const struct hostcheck *h, FILE *f)
{
	char why[WHY_MAX];
	const char *gap;
	unsigned i = 0;

	fprintf(f,
	        "%s %s: what this host gives the server, as user %s "
	        "(uid %lu)\n",
	        PACKAGE_NAME, PACKAGE_VERSION, h->user, h->uid);
	fprintf(f, "%-26s %s\n", "kernel", h->kernel);
	if (h->test_major != 0)
		fprintf(f,
		        "%-26s io_uring operations and Landlock as in Linux "
		        "%u.%u (%s)\n",
		        "test mode", h->test_major, h->test_minor,
		        TESTKERNEL_ENV);
	text_uring(h, f);
	if (h->landlock_abi < 0)
		fprintf(f, "%-26s no (%s)\n", "Landlock",
		        strerror(-h->landlock_abi));
	else
		fprintf(f, "%-26s ABI %d\n", "Landlock", h->landlock_abi);
	while (h->landlock_abi >= 0 &&
	       (gap = confine_landlock_gap(h->landlock_abi, &i)) != NULL)
		fprintf(f, "  %s\n", gap);
	fprintf(f,
	        "%-26s %lu pages soft, %lu hard (0: none), pipe-max-size %lu "
	        "pages%s\n",
	        "user's pipe quota", h->pipes.soft_pages, h->pipes.hard_pages,
	        h->pipes.max_pages,
	        h->pipes.exempt ? "; the user is exempt" : "");
	fprintf(f,
	        "%-26s budget %lu pages, with %u session%s of this server "
	        "running (this one counted): stdin grows to %lu pages, stdout "
	        "up to %lu as a local reader's rate asks; under sshd stdout "
	        "keeps its size, %s, and stdin grows to %lu "
	        "(pages of %lu bytes)\n",
	        "a session's stdio pipes", h->plan.budget, h->sessions,
	        h->sessions == 1 ? "" : "s", h->plan.stdin_pages,
	        h->plan.stdout_pages,
	        stdout_may_block(STDOUT_READER_SSHD, 1) ? "its writes block"
	                                                : "never blocks",
	        h->plan.sshd_stdin_pages, h->page_size);
	text_start_dir(h, f);
	print_option(f, "--confine", hostcheck_confine(h, why, sizeof(why)),
	             why);
	print_option(f, "--atomic-uploads",
	             hostcheck_atomic_uploads(h, why, sizeof(why)), why);
	print_option(f, "--nocache", hostcheck_nocache(h, why, sizeof(why)),
	             why);
}

/* ---- JSON ---------------------------------------------------------------- */

static void json_string(FILE *f, const char *s)
{
	char esc[JSON_ESCAPED_MAX(PATH_MAX + 1024)];

	json_escape(esc, sizeof(esc), s);
	fprintf(f, "\"%s\"", esc);
}

/* "name": "value" and, but after the last, a comma. */
static void json_field(FILE *f, const char *name, const char *value)
{
	fprintf(f, "\"%s\": ", name);
	json_string(f, value);
}

/* An errno as its name, or null for 0. */
static void json_errno(FILE *f, const char *name, int err)
{
	const char *e = err > 0 ? strerrorname_np(err) : NULL;

	if (err > 0)
		fprintf(f, "\"%s\": \"%s\"", name, e != NULL ? e : "unknown");
	else
		fprintf(f, "\"%s\": null", name);
}

/* , "name": true/false/null (not probed), "name_error": "EXXX"/null. */
static void json_probe(FILE *f, const char *name, int err)
{
	char key[64];

	if (err == HC_NOT_PROBED)
		fprintf(f, ", \"%s\": null, ", name);
	else
		fprintf(f, ", \"%s\": %s, ", name, err == 0 ? "true" : "false");
	snprintf(key, sizeof(key), "%s_error", name);
	json_errno(f, key, err == HC_NOT_PROBED ? 0 : err);
}

static void json_verdict(FILE *f, const char *name,
                         int (*decide)(const struct hostcheck *, char *,
                                       size_t),
                         const struct hostcheck *h)
{
	char why[WHY_MAX];
	int works = decide(h, why, sizeof(why));

	fprintf(f, "\"%s\": {\"works\": %s, ", name, works ? "true" : "false");
	json_field(f, "reason", why);
	fprintf(f, "}");
}

static void json_uring(const struct hostcheck *h, FILE *f)
{
	char why[WHY_MAX];
	int usable = hostcheck_uring_usable(h, why, sizeof(why));
	size_t i;

	fprintf(f, "  \"io_uring\": {\"usable\": %s, ",
	        usable ? "true" : "false");
	json_field(f, "reason", why);
	fprintf(f, ", ");
	json_errno(f, "setup_error", -h->uring.setup);
	fprintf(f, ", \"lists_operations\": %s, \"operations\": {",
	        h->uring.listed ? "true" : "false");
	for (i = 0; i < URING_OPS_USED; i++)
		fprintf(f, "%s\"%s\": %s", i ? ", " : "",
		        uring_ops_used[i].name,
		        h->uring.has[i] ? "true" : "false");
	fprintf(f, "},\n    ");
	if (h->uring_disabled < 0)
		fprintf(f, "\"io_uring_disabled\": null, ");
	else
		fprintf(f, "\"io_uring_disabled\": %d, ", h->uring_disabled);
	fprintf(f, "\"io_uring_group\": %ld, \"in_io_uring_group\": %s, ",
	        h->uring_group, h->in_uring_group ? "true" : "false");
	if (h->seccomp < 0)
		fprintf(f, "\"seccomp\": null, ");
	else
		fprintf(f, "\"seccomp\": %d, ", h->seccomp);
	if (h->memlock_unlimited)
		fprintf(f, "\"memlock_bytes\": null},\n");
	else
		fprintf(f, "\"memlock_bytes\": %llu},\n", h->memlock);
	fprintf(f, "  \"backend_auto\": \"%s\",\n",
	        usable ? "io_uring" : "plain");
}

static void json_start_dir(const struct hostcheck *h, FILE *f)
{
	fprintf(f, "  \"start_directory\": {");
	json_field(f, "path", h->start_dir);
	fprintf(f, ", \"requested\": ");
	if (h->start_dir_asked[0] != '\0')
		json_string(f, h->start_dir_asked);
	else
		fprintf(f, "null");
	fprintf(f, ", ");
	json_errno(f, "chdir_error", h->start_dir_err);
	fprintf(f, ", ");
	json_field(f, "fs_type", h->fs_type);
	fprintf(f, ",\n    ");
	json_errno(f, "probe_file_error", h->probe_file_err);
	json_probe(f, "o_tmpfile", h->tmpfile_err);
	json_probe(f, "o_direct", h->direct_err);
	json_probe(f, "rwf_dontcache", h->dontcache_err);
	json_probe(f, "fadv_dontneed", h->fadvise_err);
	fprintf(f, "},\n");
}

void hostcheck_print_json(const struct hostcheck *h, FILE *f)
{
	const char *gap;
	unsigned i = 0;
	int n = 0;

	fprintf(f, "{\n  \"program\": \"%s\", \"version\": \"%s\", ",
	        PACKAGE_NAME, PACKAGE_VERSION);
	fprintf(f, "\"uid\": %lu, ", h->uid);
	json_field(f, "user", h->user);
	fprintf(f, ",\n  \"kernel\": {");
	json_field(f, "release", h->kernel);
	if (h->test_major != 0)
		fprintf(f, ", \"test_kernel\": \"%u.%u\"},\n", h->test_major,
		        h->test_minor);
	else
		fprintf(f, ", \"test_kernel\": null},\n");
	json_uring(h, f);
	if (h->landlock_abi < 0)
		fprintf(f, "  \"landlock\": {\"abi\": null, ");
	else
		fprintf(f, "  \"landlock\": {\"abi\": %d, ", h->landlock_abi);
	json_errno(f, "error", h->landlock_abi < 0 ? -h->landlock_abi : 0);
	fprintf(f, ", \"gaps\": [");
	while (h->landlock_abi >= 0 &&
	       (gap = confine_landlock_gap(h->landlock_abi, &i)) != NULL) {
		fprintf(f, "%s", n++ ? ", " : "");
		json_string(f, gap);
	}
	fprintf(f, "]},\n");
	fprintf(f,
	        "  \"pipes\": {\"page_size\": %lu, \"soft_pages\": %lu, "
	        "\"hard_pages\": %lu, \"max_pages\": %lu, \"exempt\": %s,\n"
	        "    \"sessions\": %u, \"session_budget_pages\": %lu, "
	        "\"stdin_pages\": %lu, \"stdout_pages\": %lu,\n"
	        "    \"sshd_stdin_pages\": %lu, \"sshd_stdout_blocks\": %s},\n",
	        h->page_size, h->pipes.soft_pages, h->pipes.hard_pages,
	        h->pipes.max_pages, h->pipes.exempt ? "true" : "false",
	        h->sessions, h->plan.budget, h->plan.stdin_pages,
	        h->plan.stdout_pages, h->plan.sshd_stdin_pages,
	        stdout_may_block(STDOUT_READER_SSHD, 1) ? "true" : "false");
	json_start_dir(h, f);
	fprintf(f, "  \"options\": {\n    ");
	json_verdict(f, "confine", hostcheck_confine, h);
	fprintf(f, ",\n    ");
	json_verdict(f, "atomic_uploads", hostcheck_atomic_uploads, h);
	fprintf(f, ",\n    ");
	json_verdict(f, "nocache", hostcheck_nocache, h);
	fprintf(f, "\n  }\n}\n");
}
