/* SPDX-License-Identifier: ISC
 * Copyright (c) 2026 The uring-sftp-server developers.  See LICENSE. */
/*
 * oldkernel: run a command as on an older kernel, or as in a Docker
 * container under Docker's default seccomp profile (doc/design.md, "The
 * kernel matrix"; tests/kernel-matrix.sh runs the suites through it).
 *
 *   oldkernel [--kernel=MAJOR.MINOR] [--docker] COMMAND [ARG]...
 *
 * --kernel=V (V 5.1 or later): every system call Linux gained after V
 *   fails with ENOSYS, as on a kernel that never had it (numbers beyond
 *   the table too); io_uring_register opcodes and io_uring_enter flags
 *   newer than V fail with EINVAL, as V refuses what it does not know.
 *   What no filter can see, the io_uring operations V had (they are named
 *   inside the ring) and its Landlock ABI (a return value), the server
 *   takes from URING_SFTP_TEST_KERNEL=V, which this sets (testkernel.h).
 * --docker: Docker's default profile as it applies to a container with
 *   Docker's default capabilities on x86_64: the calls it does not allow
 *   fail with EPERM (io_uring's among them, since Docker 25), clone3 with
 *   ENOSYS, and so do socket(AF_VSOCK), personality other than the
 *   queries it allows, and clone with namespace flags.  The capability
 *   bounding set is cut to Docker's default capabilities (for root).
 * Both: the two filters stacked (Docker on an older host).
 *
 * Each filter is inherited across fork and exec.  Other ABIs than the
 * native one (32-bit code on a 64-bit kernel) are left alone.
 *
 * Exit status: the command's, or 125 when a filter cannot be installed
 * (no seccomp, or --docker on another architecture), 126/127 when the
 * command cannot be run, 2 on bad usage.
 */
#include <errno.h>
#include <linux/audit.h>
#include <linux/capability.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "seccomp-arch.h"

/* The low 32 bits of a system call argument. */
#if __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
#define ARG_LO(n) ((unsigned)offsetof(struct seccomp_data, args[n]))
#else
#define ARG_LO(n) ((unsigned)offsetof(struct seccomp_data, args[n]) + 4)
#endif

#define V(major, minor) ((major)*1000u + (minor))
#define ROWS(t) (sizeof(t) / sizeof((t)[0]))

#define EXIT_NO_FILTER 125

/* Not a system call anywhere: each filter answers it with EDOM, which
 * proves the filter is in place. */
#define SENTINEL_NR 1023

/* System calls from Linux 5.1 on, with the release that brought each.
 * From 424 on every architecture here numbers them alike. */
static const struct {
	unsigned nr, since;
} newer_calls[] = {
    {424, V(5, 1)},  /* pidfd_send_signal */
    {425, V(5, 1)},  /* io_uring_setup */
    {426, V(5, 1)},  /* io_uring_enter */
    {427, V(5, 1)},  /* io_uring_register */
    {428, V(5, 2)},  /* open_tree */
    {429, V(5, 2)},  /* move_mount */
    {430, V(5, 2)},  /* fsopen */
    {431, V(5, 2)},  /* fsconfig */
    {432, V(5, 2)},  /* fsmount */
    {433, V(5, 2)},  /* fspick */
    {434, V(5, 3)},  /* pidfd_open */
    {435, V(5, 3)},  /* clone3 */
    {436, V(5, 9)},  /* close_range */
    {437, V(5, 6)},  /* openat2 */
    {438, V(5, 6)},  /* pidfd_getfd */
    {439, V(5, 8)},  /* faccessat2 */
    {440, V(5, 10)}, /* process_madvise */
    {441, V(5, 11)}, /* epoll_pwait2 */
    {442, V(5, 12)}, /* mount_setattr */
    {443, V(5, 14)}, /* quotactl_fd */
    {444, V(5, 13)}, /* landlock_create_ruleset */
    {445, V(5, 13)}, /* landlock_add_rule */
    {446, V(5, 13)}, /* landlock_restrict_self */
    {447, V(5, 14)}, /* memfd_secret */
    {448, V(5, 15)}, /* process_mrelease */
    {449, V(5, 16)}, /* futex_waitv */
    {450, V(5, 17)}, /* set_mempolicy_home_node */
    {451, V(6, 5)},  /* cachestat */
    {452, V(6, 6)},  /* fchmodat2 */
    {453, V(6, 6)},  /* map_shadow_stack */
    {454, V(6, 7)},  /* futex_wake */
    {455, V(6, 7)},  /* futex_wait */
    {456, V(6, 7)},  /* futex_requeue */
    {457, V(6, 8)},  /* statmount */
    {458, V(6, 8)},  /* listmount */
    {459, V(6, 8)},  /* lsm_get_self_attr */
    {460, V(6, 8)},  /* lsm_set_self_attr */
    {461, V(6, 8)},  /* lsm_list_modules */
    {462, V(6, 10)}, /* mseal */
    {463, V(6, 13)}, /* setxattrat */
    {464, V(6, 13)}, /* getxattrat */
    {465, V(6, 13)}, /* listxattrat */
    {466, V(6, 13)}, /* removexattrat */
    {467, V(6, 15)}, /* open_tree_attr */
    {468, V(6, 17)}, /* file_getattr */
    {469, V(6, 17)}, /* file_setattr */
#if defined(__x86_64__)
    {335, V(6, 11)}, /* uretprobe (x86_64 only) */
#endif
};
/* Numbers from here up to NEWER_END are later than the table: no kernel
 * it names had them. */
#define NEWER_START 470
#define NEWER_END 1024

/* io_uring_register's opcodes are numbered in the order they came, up to
 * 6.9: the first one each release lacked.  Later releases are not
 * filtered. */
static const struct {
	unsigned since, first_unknown;
} register_ops[] = {
    {V(5, 1), 4},   {V(5, 2), 6},   {V(5, 5), 7},   {V(5, 6), 11},
    {V(5, 10), 13}, {V(5, 13), 17}, {V(5, 14), 19}, {V(5, 15), 20},
    {V(5, 18), 22}, {V(5, 19), 24}, {V(6, 0), 26},  {V(6, 8), 27},
    {V(6, 9), 29},
};
#define REGISTER_TABLE_END V(6, 12)
/* IORING_REGISTER_USE_REGISTERED_RING, a flag on the opcode since 6.3. */
#define REGISTER_RING_FLAG 0x80000000u

/* io_uring_enter's flags each release knew. */
static const struct {
	unsigned since, flags;
} enter_flags[] = {
    {V(5, 1), 0x03},  /* GETEVENTS, SQ_WAKEUP */
    {V(5, 10), 0x07}, /* SQ_WAIT */
    {V(5, 11), 0x0f}, /* EXT_ARG */
    {V(5, 18), 0x1f}, /* REGISTERED_RING */
    {V(6, 12), 0x3f}, /* ABS_TIMER */
    {V(6, 13), 0x7f}, /* EXT_ARG_REG */
    {V(6, 15), 0xff}, /* NO_IOWAIT */
};
#define ENTER_TABLE_END V(6, 16)

#if defined(__x86_64__)
/* Docker's default profile (moby's profiles/seccomp/default.json, as in
 * moby b985e2313a) on x86_64, for a container without CAP_SYS_ADMIN and
 * the other capabilities it adds rules for: of the numbers 0 to 469,
 * these are not allowed (EPERM), nor is any number after them.  The rest
 * are, but for the four below with rules of their own. */
static const unsigned short docker_denied[] = {
    103 /* syslog */,
    134 /* uselib */,
    136 /* ustat */,
    139 /* sysfs */,
    153 /* vhangup */,
    155 /* pivot_root */,
    156 /* _sysctl */,
    163 /* acct */,
    164 /* settimeofday */,
    165 /* mount */,
    166 /* umount2 */,
    167 /* swapon */,
    168 /* swapoff */,
    169 /* reboot */,
    170 /* sethostname */,
    171 /* setdomainname */,
    172 /* iopl */,
    173 /* ioperm */,
    174 /* create_module */,
    175 /* init_module */,
    176 /* delete_module */,
    177 /* get_kernel_syms */,
    178 /* query_module */,
    179 /* quotactl */,
    180 /* nfsservctl */,
    181 /* getpmsg */,
    182 /* putpmsg */,
    183 /* afs_syscall */,
    184 /* tuxcall */,
    185 /* security */,
    212 /* lookup_dcookie */,
    227 /* clock_settime */,
    236 /* vserver */,
    237 /* mbind */,
    238 /* set_mempolicy */,
    239 /* get_mempolicy */,
    246 /* kexec_load */,
    248 /* add_key */,
    249 /* request_key */,
    250 /* keyctl */,
    256 /* migrate_pages */,
    272 /* unshare */,
    279 /* move_pages */,
    298 /* perf_event_open */,
    300 /* fanotify_init */,
    304 /* open_by_handle_at */,
    308 /* setns */,
    312 /* kcmp */,
    313 /* finit_module */,
    320 /* kexec_file_load */,
    321 /* bpf */,
    323 /* userfaultfd */,
    425 /* io_uring_setup */,
    426 /* io_uring_enter */,
    427 /* io_uring_register */,
    428 /* open_tree */,
    429 /* move_mount */,
    430 /* fsopen */,
    431 /* fsconfig */,
    432 /* fsmount */,
    433 /* fspick */,
    438 /* pidfd_getfd */,
    440 /* process_madvise */,
    442 /* mount_setattr */,
    443 /* quotactl_fd */,
    450 /* set_mempolicy_home_node */,
    459 /* lsm_get_self_attr */,
    460 /* lsm_set_self_attr */,
    461 /* lsm_list_modules */,
    467 /* open_tree_attr */,
    468 /* file_getattr */,
    469 /* file_setattr */,
};
#define DOCKER_KNOWN_END 470
#define NR_SOCKET 41
#define NR_CLONE 56
#define NR_PERSONALITY 135
#define NR_CLONE3 435
#define AF_VSOCK_ 40
/* clone's namespace flags: CLONE_NEWNS and CLONE_NEWCGROUP .. CLONE_NEWNET
 * (the profile's mask). */
#define CLONE_NAMESPACES 0x7e020000u
/* The personality values it allows: PER_LINUX, UNAME26, PER_LINUX32,
 * PER_LINUX32 | UNAME26, and 0xffffffff (the query). */
static const unsigned personalities[] = {0x0, 0x8, 0x20000, 0x20008,
                                         0xffffffffu};
/* Docker's default capabilities (moby's oci/caps DefaultCapabilities). */
static const unsigned docker_caps[] = {
    CAP_CHOWN,   CAP_DAC_OVERRIDE, CAP_FSETID,           CAP_FOWNER,
    CAP_MKNOD,   CAP_NET_RAW,      CAP_SETGID,           CAP_SETUID,
    CAP_SETFCAP, CAP_SETPCAP,      CAP_NET_BIND_SERVICE, CAP_SYS_CHROOT,
    CAP_KILL,    CAP_AUDIT_WRITE};
#endif

/* ---- building a filter ------------------------------------------- */

#define PROG_MAX 1024

struct prog {
	struct sock_filter code[PROG_MAX];
	unsigned short len;
};

static void emit(struct prog *p, struct sock_filter insn)
{
	if (p->len >= PROG_MAX) {
		fprintf(stderr, "oldkernel: filter too long\n");
		exit(2);
	}
	p->code[p->len++] = insn;
}

static void ret(struct prog *p, unsigned action)
{
	emit(p, (struct sock_filter)BPF_STMT(BPF_RET | BPF_K, action));
}

static unsigned errno_action(int err)
{
	return SECCOMP_RET_ERRNO | ((unsigned)err & SECCOMP_RET_DATA);
}

static void load(struct prog *p, unsigned offset)
{
	emit(p, (struct sock_filter)BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offset));
}

/* The start of every filter: other ABIs pass; the number in A; the
 * sentinel answered. */
static void prologue(struct prog *p)
{
	load(p, offsetof(struct seccomp_data, arch));
	emit(p, (struct sock_filter)BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K,
	                                     NATIVE_ARCH, 1, 0));
	ret(p, SECCOMP_RET_ALLOW);
	load(p, offsetof(struct seccomp_data, nr));
	emit(p, (struct sock_filter)BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K,
	                                     SENTINEL_NR, 0, 1));
	ret(p, errno_action(EDOM));
}

/* A == nr: return action; A is kept otherwise. */
static void on_nr(struct prog *p, unsigned nr, unsigned action)
{
	emit(p,
	     (struct sock_filter)BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, nr, 0, 1));
	ret(p, action);
}

/* lo <= A < hi: return action. */
static void on_range(struct prog *p, unsigned lo, unsigned hi, unsigned action)
{
	emit(p,
	     (struct sock_filter)BPF_JUMP(BPF_JMP | BPF_JGE | BPF_K, lo, 0, 2));
	emit(p,
	     (struct sock_filter)BPF_JUMP(BPF_JMP | BPF_JGE | BPF_K, hi, 1, 0));
	ret(p, action);
}

static int install(struct prog *p)
{
	struct sock_fprog fprog = {.len = p->len, .filter = p->code};

	if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0) {
		perror("oldkernel: PR_SET_NO_NEW_PRIVS");
		return -1;
	}
	if (prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &fprog) != 0) {
		perror("oldkernel: PR_SET_SECCOMP");
		return -1;
	}
	/* Prove it took before trusting it. */
	if (syscall(SENTINEL_NR) != -1 || errno != EDOM) {
		fprintf(stderr, "oldkernel: the filter is not in place\n");
		return -1;
	}
	return 0;
}

/* ---- --kernel ------------------------------------------------------ */

static int kernel_filter(unsigned version)
{
	struct prog p = {.len = 0};
	unsigned first_unknown = 0, known_flags = 0;
	size_t i;

	prologue(&p);
	for (i = 0; i < ROWS(newer_calls); i++)
		if (newer_calls[i].since > version)
			on_nr(&p, newer_calls[i].nr, errno_action(ENOSYS));
	on_range(&p, NEWER_START, NEWER_END, errno_action(ENOSYS));

	for (i = 0; i < ROWS(register_ops); i++)
		if (register_ops[i].since <= version)
			first_unknown = register_ops[i].first_unknown;
	if (version < REGISTER_TABLE_END) {
		/* A == io_uring_register: opcode >= first_unknown is
		 * EINVAL, minus the flag where the kernel had it. */
		emit(&p, (struct sock_filter)BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K,
		                                      427, 0, 5));
		load(&p, ARG_LO(1));
		emit(&p, (struct sock_filter)BPF_STMT(
		             BPF_ALU | BPF_AND | BPF_K,
		             version >= V(6, 3) ? ~REGISTER_RING_FLAG : ~0u));
		emit(&p, (struct sock_filter)BPF_JUMP(BPF_JMP | BPF_JGE | BPF_K,
		                                      first_unknown, 0, 1));
		ret(&p, errno_action(EINVAL));
		ret(&p, SECCOMP_RET_ALLOW);
	}
	for (i = 0; i < ROWS(enter_flags); i++)
		if (enter_flags[i].since <= version)
			known_flags = enter_flags[i].flags;
	if (version < ENTER_TABLE_END) {
		emit(&p, (struct sock_filter)BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K,
		                                      426, 0, 4));
		load(&p, ARG_LO(3));
		emit(&p, (struct sock_filter)BPF_JUMP(
		             BPF_JMP | BPF_JSET | BPF_K, ~known_flags, 0, 1));
		ret(&p, errno_action(EINVAL));
		ret(&p, SECCOMP_RET_ALLOW);
	}
	ret(&p, SECCOMP_RET_ALLOW);
	return install(&p);
}

/* ---- --docker -------------------------------------------------------- */

#if defined(__x86_64__)
/* Out of the bounding set with every capability Docker does not grant:
 * root's next exec gets no more.  Without CAP_SETPCAP (not root) there is
 * nothing to drop. */
static void docker_capabilities(void)
{
	unsigned cap, i;
	int keep;

	for (cap = 0; cap <= 63; cap++) {
		keep = 0;
		for (i = 0; i < ROWS(docker_caps); i++)
			keep |= docker_caps[i] == cap;
		if (keep || prctl(PR_CAPBSET_READ, cap, 0, 0, 0) != 1)
			continue;
		if (prctl(PR_CAPBSET_DROP, cap, 0, 0, 0) != 0 &&
		    errno != EPERM) {
			perror("oldkernel: PR_CAPBSET_DROP");
			exit(EXIT_NO_FILTER);
		}
	}
}

static int docker_filter(void)
{
	struct prog p = {.len = 0};
	size_t i;

	docker_capabilities();
	prologue(&p);
	for (i = 0; i < ROWS(docker_denied); i++)
		on_nr(&p, docker_denied[i], errno_action(EPERM));
	on_range(&p, DOCKER_KNOWN_END, 0xffffffffu, errno_action(EPERM));
	on_nr(&p, NR_CLONE3, errno_action(ENOSYS));

	/* socket: any domain but AF_VSOCK. */
	emit(&p, (struct sock_filter)BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K,
	                                      NR_SOCKET, 0, 4));
	load(&p, ARG_LO(0));
	emit(&p, (struct sock_filter)BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K,
	                                      AF_VSOCK_, 0, 1));
	ret(&p, errno_action(EPERM));
	ret(&p, SECCOMP_RET_ALLOW);

	/* clone: no namespace flag. */
	emit(&p, (struct sock_filter)BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K,
	                                      NR_CLONE, 0, 4));
	load(&p, ARG_LO(0));
	emit(&p, (struct sock_filter)BPF_JUMP(BPF_JMP | BPF_JSET | BPF_K,
	                                      CLONE_NAMESPACES, 0, 1));
	ret(&p, errno_action(EPERM));
	ret(&p, SECCOMP_RET_ALLOW);

	/* personality: the values listed. */
	emit(&p, (struct sock_filter)BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K,
	                                      NR_PERSONALITY, 0,
	                                      2 + 2 * ROWS(personalities)));
	load(&p, ARG_LO(0));
	for (i = 0; i < ROWS(personalities); i++)
		on_nr(&p, personalities[i], SECCOMP_RET_ALLOW);
	ret(&p, errno_action(EPERM));

	ret(&p, SECCOMP_RET_ALLOW);
	if (install(&p) != 0)
		return -1;
	/* As Docker 25 and later refuse it. */
	if (syscall(__NR_io_uring_setup, 1, NULL) != -1 || errno != EPERM) {
		fprintf(stderr, "oldkernel: io_uring_setup is not denied\n");
		return -1;
	}
	return 0;
}
#else
static int docker_filter(void)
{
	fprintf(stderr, "oldkernel: --docker knows only x86_64's numbers\n");
	return -1;
}
#endif

/* ---- main ------------------------------------------------------------ */

static void usage(void)
{
	fprintf(stderr, "usage: oldkernel [--kernel=MAJOR.MINOR] [--docker] "
	                "COMMAND [ARG]...\n");
	exit(2);
}

static unsigned parse_version(const char *s)
{
	unsigned long major, minor;
	char *end;

	if (*s < '0' || *s > '9')
		return 0;
	major = strtoul(s, &end, 10);
	if (*end != '.' || end[1] < '0' || end[1] > '9')
		return 0;
	minor = strtoul(end + 1, &end, 10);
	if (*end != '\0' || major > 99 || minor > 999 ||
	    V(major, minor) < V(5, 1))
		return 0;
	return V((unsigned)major, (unsigned)minor);
}

int main(int argc, char **argv)
{
	const char *kernel = NULL;
	unsigned version = 0;
	int first = 1, docker = 0;

	for (; first < argc && argv[first][0] == '-'; first++) {
		if (strncmp(argv[first], "--kernel=", 9) == 0) {
			kernel = argv[first] + 9;
			if ((version = parse_version(kernel)) == 0)
				usage();
		} else if (strcmp(argv[first], "--docker") == 0) {
			docker = 1;
		} else {
			usage();
		}
	}
	if (first >= argc || (version == 0 && !docker))
		usage();
	if (docker && docker_filter() != 0)
		return EXIT_NO_FILTER;
	if (version != 0) {
		if (kernel_filter(version) != 0)
			return EXIT_NO_FILTER;
		if (setenv("URING_SFTP_TEST_KERNEL", kernel, 1) != 0) {
			perror("oldkernel: setenv");
			return EXIT_NO_FILTER;
		}
	}
	execvp(argv[first], argv + first);
	fprintf(stderr, "oldkernel: %s: %s\n", argv[first], strerror(errno));
	return errno == ENOENT ? 127 : 126;
}
