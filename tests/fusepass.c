/* SPDX-License-Identifier: ISC
 * Copyright (c) 2026 The uring-sftp-server developers.  See LICENSE. */
/*
 * fusepass: a FUSE passthrough file system for the tests and the bench.
 *
 *   fusepass [FUSE options] [-o delay_us=N|delay_ms=N] SOURCE MOUNTPOINT
 *
 * Every path below MOUNTPOINT is SOURCE's; file data moves by pread(2) and
 * pwrite(2) on a descriptor of the source file kept in the open file's
 * handle.  Each call the kernel makes waits delay_us microseconds (or
 * delay_ms milliseconds; the environment variable FUSEPASS_DELAY_US when
 * neither option is given) before it is carried out, so the mount behaves
 * like storage behind a network: the event loop is multithreaded (unless
 * -s), and delayed calls overlap.
 *
 * Lookups in one directory overlap too, as on NFS or CephFS: the kernel
 * is asked for parallel directory operations (FUSE_CAP_PARALLEL_DIROPS,
 * which libfuse 3.14 does not ask for by itself).  Without it the kernel
 * holds a lock of the directory's across each LOOKUP and READDIR round
 * trip, so that the names of a directory not yet in its cache are looked
 * up one at a time, whoever asks; -o serial_dirops mounts it that way.
 * Attributes and names stay in the kernel's cache for libfuse's default
 * of 1 s (entry_timeout, attr_timeout), then each use costs a round trip
 * again.
 *
 * -o stats=FILE: at unmount, append to FILE how many calls were made and
 * how many ran at once at most ("calls=N peak=M lookups=N
 * lookup_peak=M", lookups being the calls by path that LOOKUP and
 * GETATTR make).
 *
 * default_permissions is always on: the kernel checks permissions against
 * the modes and owners this file system reports, as for a local file
 * system; this process (normally root) then carries out what the kernel
 * allowed.  Objects a caller creates get the caller's uid, and its gid
 * unless the parent directory is set-group-ID.  Mount it as root with
 * -o allow_other for other users to see it.  Without -f it returns once
 * the mount is up and goes on in the background; `umount MOUNTPOINT`
 * stops it.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE /* renameat2, fallocate */
#endif
#define FUSE_USE_VERSION 312 /* fuse_loop_mt with a configuration */

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <fuse.h>
#include <fuse_lowlevel.h>
#include <limits.h>
#include <linux/fuse.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <sys/uio.h>
#include <time.h>
#include <unistd.h>

struct settings {
	char *source;
	unsigned int delay_us;
	unsigned int delay_ms;
	int hard_remove;
	int serial_dirops;
	char *stats;
	int show_help;
};

static struct settings conf;
/* The source directory, opened once: every path is resolved below it. */
static int src_fd = -1;
static long delay_ns;

#define OPT(t, p, v)                                                           \
	{                                                                      \
		t, offsetof(struct settings, p), v                             \
	}
static const struct fuse_opt option_spec[] = {
    OPT("delay_us=%u", delay_us, 0),    OPT("delay_ms=%u", delay_ms, 0),
    OPT("hard_remove", hard_remove, 1), OPT("serial_dirops", serial_dirops, 1),
    OPT("stats=%s", stats, 0),          OPT("-h", show_help, 1),
    OPT("--help", show_help, 1),        FUSE_OPT_END,
};

/* -o stats: calls made, calls under way and the most at once; the same
 * for lookups by path (LOOKUP, and GETATTR without a handle). */
struct counts {
	unsigned long calls, now, peak;
};
static struct counts all_calls, lookups;

static void count_in(struct counts *c)
{
	unsigned long now, peak;

	__atomic_add_fetch(&c->calls, 1, __ATOMIC_RELAXED);
	now = __atomic_add_fetch(&c->now, 1, __ATOMIC_RELAXED);
	peak = __atomic_load_n(&c->peak, __ATOMIC_RELAXED);
	while (now > peak &&
	       !__atomic_compare_exchange_n(&c->peak, &peak, now, 1,
	                                    __ATOMIC_RELAXED, __ATOMIC_RELAXED))
		;
}

static void count_out(struct counts *c)
{
	__atomic_sub_fetch(&c->now, 1, __ATOMIC_RELAXED);
}

/* Wait the simulated storage latency. */
static void sleep_delay(void)
{
	struct timespec ts;

	if (delay_ns <= 0)
		return;
	ts.tv_sec = delay_ns / 1000000000L;
	ts.tv_nsec = delay_ns % 1000000000L;
	while (nanosleep(&ts, &ts) != 0 && errno == EINTR)
		;
}

/* Every call waits this long first (the simulated storage latency). */
static void latency(void)
{
	count_in(&all_calls);
	sleep_delay();
	count_out(&all_calls);
}

/* FUSE paths start with '/'; the *at() calls want them relative to
 * src_fd, and "." for the root itself. */
static const char *rel(const char *path)
{
	while (*path == '/')
		path++;
	return *path ? path : ".";
}

static int neg_errno(void)
{
	return -errno;
}

/* Give a new object the caller's uid, and its gid unless the directory
 * it was made in passes its own group on (set-group-ID). */
static void give_to_caller(const char *path)
{
	const struct fuse_context *ctx = fuse_get_context();
	char parent[PATH_MAX];
	const char *r = rel(path);
	const char *slash = strrchr(r, '/');
	struct stat st;
	gid_t gid = ctx->gid;
	int ok;

	if (slash && (size_t)(slash - r) < sizeof(parent)) {
		memcpy(parent, r, (size_t)(slash - r));
		parent[slash - r] = '\0';
		ok = fstatat(src_fd, parent, &st, 0) == 0;
	} else {
		ok = fstat(src_fd, &st) == 0;
	}
	if (ok && (st.st_mode & S_ISGID))
		gid = (gid_t)-1;
	/* Best effort, as the object exists already; root can always. */
	if (fchownat(src_fd, r, ctx->uid, gid, AT_SYMLINK_NOFOLLOW) != 0)
		fprintf(stderr, "fusepass: chown %s: %s\n", r, strerror(errno));
}

/* libfuse before 3.17.1 never passes FUSE_CAP_PARALLEL_DIROPS on to the
 * kernel, whatever the file system wants (libfuse commit c9905341, "Pass
 * FUSE_PARALLEL_DIROPS to kernel"): the reply to INIT is sent through
 * these, which set the flag in it when fp_init asked for it. */
static int add_parallel_dirops;
static int debug; /* -d: say so (libfuse's own log shows the flags unset) */
static uint64_t init_unique; /* the INIT request's, while it is answered */

static ssize_t io_read(int fd, void *buf, size_t len, void *userdata)
{
	const struct fuse_in_header *in = buf;
	ssize_t n = read(fd, buf, len);

	(void)userdata;
	if (n >= (ssize_t)sizeof(*in) && in->opcode == FUSE_INIT)
		__atomic_store_n(&init_unique, in->unique, __ATOMIC_RELEASE);
	return n;
}

static ssize_t io_writev(int fd, struct iovec *iov, int count, void *userdata)
{
	const struct fuse_out_header *out;
	struct fuse_init_out init;
	struct iovec patched[2];
	uint64_t unique = __atomic_load_n(&init_unique, __ATOMIC_ACQUIRE);

	(void)userdata;
	if (unique == 0 || count != 2 || iov[0].iov_len < sizeof(*out))
		return writev(fd, iov, count);
	out = iov[0].iov_base;
	if (out->unique != unique)
		return writev(fd, iov, count);
	__atomic_store_n(&init_unique, 0, __ATOMIC_RELEASE);
	/* The flags are the fourth field in every version of the reply. */
	if (out->error != 0 ||
	    iov[1].iov_len < offsetof(struct fuse_init_out, flags) + 4 ||
	    iov[1].iov_len > sizeof(init) ||
	    !__atomic_load_n(&add_parallel_dirops, __ATOMIC_ACQUIRE))
		return writev(fd, iov, count);
	memcpy(&init, iov[1].iov_base, iov[1].iov_len);
	init.flags |= FUSE_PARALLEL_DIROPS;
	if (debug)
		fprintf(stderr, "fusepass: INIT reply: FUSE_PARALLEL_DIROPS "
		                "added\n");
	patched[0] = iov[0];
	patched[1].iov_base = &init;
	patched[1].iov_len = iov[1].iov_len;
	return writev(fd, patched, 2);
}

static void *fp_init(struct fuse_conn_info *conn, struct fuse_config *cfg)
{
	latency();
	/* Lookups and reads of one directory run at once, as on a network
	 * file system (see the top). */
	if (conf.serial_dirops) {
		conn->want &= ~FUSE_CAP_PARALLEL_DIROPS;
	} else if (conn->capable & FUSE_CAP_PARALLEL_DIROPS) {
		conn->want |= FUSE_CAP_PARALLEL_DIROPS;
		__atomic_store_n(&add_parallel_dirops, 1, __ATOMIC_RELEASE);
	}
	/* Inode numbers are the source's.  Calls on an open file go
	 * through its descriptor and need no path; a removed file that is
	 * still open is renamed to .fuse_hidden* (libfuse's default), so
	 * that fstat(2), which reaches us without the descriptor, finds
	 * it. */
	cfg->use_ino = 1;
	cfg->nullpath_ok = 1;
	/* -o hard_remove: a removed file is gone at once, open or not, as on
	 * a local file system (the model test compares trees). */
	cfg->hard_remove = conf.hard_remove;
	return NULL;
}

static void fp_destroy(void *private_data)
{
	FILE *f;

	(void)private_data;
	if (!conf.stats || !(f = fopen(conf.stats, "a")))
		return;
	fprintf(f, "calls=%lu peak=%lu lookups=%lu lookup_peak=%lu\n",
	        all_calls.calls, all_calls.peak, lookups.calls, lookups.peak);
	fclose(f);
}

static int fp_getattr(const char *path, struct stat *st,
                      struct fuse_file_info *fi)
{
	int rc;

	if (fi) {
		latency();
		rc = fstat((int)fi->fh, st);
	} else {
		count_in(&lookups);
		latency();
		rc = fstatat(src_fd, rel(path), st, AT_SYMLINK_NOFOLLOW);
		count_out(&lookups);
	}
	return rc == 0 ? 0 : neg_errno();
}

static int fp_readlink(const char *path, char *buf, size_t size)
{
	ssize_t n;

	latency();
	if (size == 0)
		return -EINVAL;
	n = readlinkat(src_fd, rel(path), buf, size - 1);
	if (n < 0)
		return neg_errno();
	buf[n] = '\0';
	return 0;
}

static int fp_mknod(const char *path, mode_t mode, dev_t dev)
{
	latency();
	if (mknodat(src_fd, rel(path), mode, dev) != 0)
		return neg_errno();
	give_to_caller(path);
	return 0;
}

static int fp_mkdir(const char *path, mode_t mode)
{
	latency();
	if (mkdirat(src_fd, rel(path), mode) != 0)
		return neg_errno();
	give_to_caller(path);
	return 0;
}

static int fp_unlink(const char *path)
{
	latency();
	return unlinkat(src_fd, rel(path), 0) == 0 ? 0 : neg_errno();
}

static int fp_rmdir(const char *path)
{
	latency();
	return unlinkat(src_fd, rel(path), AT_REMOVEDIR) == 0 ? 0 : neg_errno();
}

static int fp_symlink(const char *target, const char *path)
{
	latency();
	if (symlinkat(target, src_fd, rel(path)) != 0)
		return neg_errno();
	give_to_caller(path);
	return 0;
}

static int fp_rename(const char *from, const char *to, unsigned int flags)
{
	latency();
	if (renameat2(src_fd, rel(from), src_fd, rel(to), flags) != 0)
		return neg_errno();
	return 0;
}

static int fp_link(const char *from, const char *to)
{
	latency();
	return linkat(src_fd, rel(from), src_fd, rel(to), 0) == 0 ? 0
	                                                          : neg_errno();
}

static int fp_chmod(const char *path, mode_t mode, struct fuse_file_info *fi)
{
	int rc;

	latency();
	if (fi)
		rc = fchmod((int)fi->fh, mode);
	else
		rc = fchmodat(src_fd, rel(path), mode, 0);
	return rc == 0 ? 0 : neg_errno();
}

static int fp_chown(const char *path, uid_t uid, gid_t gid,
                    struct fuse_file_info *fi)
{
	int rc;

	latency();
	if (fi)
		rc = fchown((int)fi->fh, uid, gid);
	else
		rc = fchownat(src_fd, rel(path), uid, gid, AT_SYMLINK_NOFOLLOW);
	return rc == 0 ? 0 : neg_errno();
}

static int fp_truncate(const char *path, off_t size, struct fuse_file_info *fi)
{
	int fd, rc, saved;

	latency();
	if (fi)
		return ftruncate((int)fi->fh, size) == 0 ? 0 : neg_errno();
	fd = openat(src_fd, rel(path), O_WRONLY | O_CLOEXEC);
	if (fd < 0)
		return neg_errno();
	rc = ftruncate(fd, size);
	saved = errno;
	close(fd);
	return rc == 0 ? 0 : -saved;
}

static int fp_open(const char *path, struct fuse_file_info *fi)
{
	int fd;

	latency();
	fd = openat(src_fd, rel(path), fi->flags | O_CLOEXEC);
	if (fd < 0)
		return neg_errno();
	fi->fh = (uint64_t)fd;
	return 0;
}

static int fp_create(const char *path, mode_t mode, struct fuse_file_info *fi)
{
	int fd;

	latency();
	fd = openat(src_fd, rel(path), fi->flags | O_CREAT | O_CLOEXEC, mode);
	if (fd < 0)
		return neg_errno();
	give_to_caller(path);
	fi->fh = (uint64_t)fd;
	return 0;
}

static int fp_read(const char *path, char *buf, size_t size, off_t off,
                   struct fuse_file_info *fi)
{
	ssize_t n;

	(void)path;
	latency();
	n = pread((int)fi->fh, buf, size, off);
	return n < 0 ? neg_errno() : (int)n;
}

static int fp_write(const char *path, const char *buf, size_t size, off_t off,
                    struct fuse_file_info *fi)
{
	ssize_t n;

	(void)path;
	latency();
	n = pwrite((int)fi->fh, buf, size, off);
	return n < 0 ? neg_errno() : (int)n;
}

static int fp_statfs(const char *path, struct statvfs *sv)
{
	(void)path;
	latency();
	return fstatvfs(src_fd, sv) == 0 ? 0 : neg_errno();
}

static int fp_flush(const char *path, struct fuse_file_info *fi)
{
	int fd;

	(void)path;
	latency();
	/* What close(2) of one of the caller's descriptors would do to the
	 * source file, without closing the descriptor we keep. */
	fd = dup((int)fi->fh);
	if (fd < 0)
		return neg_errno();
	return close(fd) == 0 ? 0 : neg_errno();
}

static int fp_release(const char *path, struct fuse_file_info *fi)
{
	(void)path;
	latency();
	close((int)fi->fh);
	return 0;
}

static int fp_fsync(const char *path, int datasync, struct fuse_file_info *fi)
{
	int rc;

	(void)path;
	latency();
	rc = datasync ? fdatasync((int)fi->fh) : fsync((int)fi->fh);
	return rc == 0 ? 0 : neg_errno();
}

static int fp_opendir(const char *path, struct fuse_file_info *fi)
{
	DIR *dir;
	int fd;

	latency();
	fd = openat(src_fd, rel(path), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0)
		return neg_errno();
	dir = fdopendir(fd);
	if (!dir) {
		int saved = errno;

		close(fd);
		return -saved;
	}
	fi->fh = (uint64_t)(uintptr_t)dir;
	return 0;
}

static int fp_readdir(const char *path, void *buf, fuse_fill_dir_t filler,
                      off_t off, struct fuse_file_info *fi,
                      enum fuse_readdir_flags flags)
{
	DIR *dir = (DIR *)(uintptr_t)fi->fh;
	struct dirent *de;

	(void)path;
	(void)off;
	(void)flags;
	latency();
	/* The whole directory each time (offset 0 to the filler): libfuse
	 * keeps it and hands it out in pieces, and asks again from the
	 * start only after a rewind. */
	rewinddir(dir);
	errno = 0;
	while ((de = readdir(dir)) != NULL) {
		struct stat st;

		memset(&st, 0, sizeof(st));
		st.st_ino = de->d_ino;
		st.st_mode = (mode_t)DTTOIF(de->d_type);
		if (filler(buf, de->d_name, &st, 0, 0) != 0)
			return 0;
		errno = 0;
	}
	return errno != 0 ? neg_errno() : 0;
}

static int fp_releasedir(const char *path, struct fuse_file_info *fi)
{
	(void)path;
	latency();
	closedir((DIR *)(uintptr_t)fi->fh);
	return 0;
}

static int fp_utimens(const char *path, const struct timespec tv[2],
                      struct fuse_file_info *fi)
{
	int rc;

	latency();
	if (fi)
		rc = futimens((int)fi->fh, tv);
	else
		rc = utimensat(src_fd, rel(path), tv, AT_SYMLINK_NOFOLLOW);
	return rc == 0 ? 0 : neg_errno();
}

static int fp_fallocate(const char *path, int mode, off_t off, off_t len,
                        struct fuse_file_info *fi)
{
	int fd, rc, saved;

	latency();
	if (fi)
		return fallocate((int)fi->fh, mode, off, len) == 0
		           ? 0
		           : neg_errno();
	fd = openat(src_fd, rel(path), O_WRONLY | O_CLOEXEC);
	if (fd < 0)
		return neg_errno();
	rc = fallocate(fd, mode, off, len);
	saved = errno;
	close(fd);
	return rc == 0 ? 0 : -saved;
}

static const struct fuse_operations fp_ops = {
    .init = fp_init,
    .destroy = fp_destroy,
    .getattr = fp_getattr,
    .readlink = fp_readlink,
    .mknod = fp_mknod,
    .mkdir = fp_mkdir,
    .unlink = fp_unlink,
    .rmdir = fp_rmdir,
    .symlink = fp_symlink,
    .rename = fp_rename,
    .link = fp_link,
    .chmod = fp_chmod,
    .chown = fp_chown,
    .truncate = fp_truncate,
    .open = fp_open,
    .read = fp_read,
    .write = fp_write,
    .statfs = fp_statfs,
    .flush = fp_flush,
    .release = fp_release,
    .fsync = fp_fsync,
    .opendir = fp_opendir,
    .readdir = fp_readdir,
    .releasedir = fp_releasedir,
    .create = fp_create,
    .utimens = fp_utimens,
    .fallocate = fp_fallocate,
};

/* The first argument that is not an option is SOURCE (taken out of the
 * arguments fuse_main sees); the next is the mount point (left in). */
static int take_source(void *data, const char *arg, int key,
                       struct fuse_args *outargs)
{
	(void)data;
	(void)outargs;
	if (key == FUSE_OPT_KEY_NONOPT && conf.source == NULL) {
		conf.source = strdup(arg);
		return conf.source ? 0 : -1;
	}
	return 1;
}

static void usage(const char *prog)
{
	printf("usage: %s [options] SOURCE MOUNTPOINT\n"
	       "\n"
	       "A passthrough of SOURCE at MOUNTPOINT.\n"
	       "    -o delay_us=N    wait N microseconds in every call\n"
	       "    -o delay_ms=N    wait N milliseconds in every call\n"
	       "                     (default: $FUSEPASS_DELAY_US, else 0)\n"
	       "    -o hard_remove   remove a file still open at once\n"
	       "    -o serial_dirops one LOOKUP or READDIR at a time per\n"
	       "                     directory (the kernel's default)\n"
	       "    -o stats=FILE    append call counts to FILE at unmount\n"
	       "default_permissions is always on; as root, add\n"
	       "-o allow_other for other users.\n"
	       "\n",
	       prog);
}

/* fuse_main, with the reply to INIT through io_read and io_writev, and
 * -o max_threads passed to the loop here (upstream 3.14's fuse_main drops
 * it, libfuse commit ab5ca07a). */
static int run(struct fuse_args *args)
{
	static const struct fuse_custom_io io = {
	    .read = io_read,
	    .writev = io_writev,
	};
	struct fuse_loop_config *loop = NULL;
	struct fuse_cmdline_opts opts;
	struct fuse_session *se;
	struct fuse *fuse;
	int rc = 1;

	if (fuse_parse_cmdline(args, &opts) != 0)
		return 1;
	debug = opts.debug;
	if (!opts.mountpoint) {
		fprintf(stderr, "fusepass: no mount point\n");
		return 2;
	}
	fuse = fuse_new(args, &fp_ops, sizeof(fp_ops), NULL);
	if (!fuse)
		goto out;
	if (fuse_mount(fuse, opts.mountpoint) != 0)
		goto destroy;
	se = fuse_get_session(fuse);
	/* The same descriptor, read and written through io. */
	if (fuse_session_custom_io(se, &io, fuse_session_fd(se)) != 0 ||
	    fuse_daemonize(opts.foreground) != 0 ||
	    fuse_set_signal_handlers(se) != 0)
		goto unmount;
	if (opts.singlethread) {
		rc = fuse_loop(fuse) != 0;
	} else if ((loop = fuse_loop_cfg_create()) != NULL) {
		fuse_loop_cfg_set_clone_fd(loop, (unsigned)opts.clone_fd);
		fuse_loop_cfg_set_idle_threads(loop, opts.max_idle_threads);
		fuse_loop_cfg_set_max_threads(loop, opts.max_threads);
		rc = fuse_loop_mt(fuse, loop) != 0;
		fuse_loop_cfg_destroy(loop);
	}
	fuse_remove_signal_handlers(se);
unmount:
	fuse_unmount(fuse);
destroy:
	fuse_destroy(fuse);
out:
	free(opts.mountpoint);
	return rc;
}

int main(int argc, char *argv[])
{
	struct fuse_args args = FUSE_ARGS_INIT(argc, argv);
	const char *env;
	char *real;
	int rc;

	/* UINT_MAX: not given (then the environment decides). */
	conf.delay_us = UINT_MAX;
	conf.delay_ms = UINT_MAX;
	if (fuse_opt_parse(&args, &conf, option_spec, take_source) != 0)
		return 1;
	/* Explicit thread limits (options given on the command line come
	 * later and win): libfuse 3.14 otherwise complains about its own
	 * default for idle threads.  Idle threads stay, so that a burst of
	 * slow calls does not start and stop threads. */
	if (fuse_opt_insert_arg(&args, 1, "-omax_threads=64") != 0 ||
	    fuse_opt_insert_arg(&args, 1, "-omax_idle_threads=64") != 0)
		return 1;
	if (conf.show_help) {
		usage(argv[0]);
		fuse_cmdline_help();
		fuse_lib_help(&args);
		fuse_opt_free_args(&args);
		return 0;
	}
	if (!conf.source) {
		usage(argv[0]);
		return 2;
	}
	env = getenv("FUSEPASS_DELAY_US");
	if (conf.delay_us == UINT_MAX && conf.delay_ms == UINT_MAX && env &&
	    *env) {
		char *end;
		unsigned long v = strtoul(env, &end, 10);

		if (*end != '\0' || v > 60000000UL) {
			fprintf(stderr, "fusepass: bad FUSEPASS_DELAY_US=%s\n",
			        env);
			return 2;
		}
		conf.delay_us = (unsigned int)v;
	}
	if (conf.delay_us == UINT_MAX)
		conf.delay_us = 0;
	if (conf.delay_ms == UINT_MAX)
		conf.delay_ms = 0;
	if (conf.delay_us > 60000000U || conf.delay_ms > 60000U) {
		fprintf(stderr, "fusepass: a delay of at most 60 s\n");
		return 2;
	}
	delay_ns = (long)conf.delay_us * 1000L + (long)conf.delay_ms * 1000000L;

	real = realpath(conf.source, NULL);
	if (!real) {
		fprintf(stderr, "fusepass: %s: %s\n", conf.source,
		        strerror(errno));
		return 1;
	}
	src_fd = open(real, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (src_fd < 0) {
		fprintf(stderr, "fusepass: %s: %s\n", real, strerror(errno));
		return 1;
	}
	free(real);
	/* Modes arrive with the caller's umask applied by the kernel. */
	umask(0);
	if (fuse_opt_add_arg(&args, "-odefault_permissions") != 0)
		return 1;
	rc = run(&args);
	fuse_opt_free_args(&args);
	close(src_fd);
	free(conf.source);
	free(conf.stats);
	return rc;
}
