/* SPDX-License-Identifier: ISC
 * Copyright (c) 2026 The uring-sftp-server developers.  See LICENSE. */
/*
 * sftp-load: a small SFTP version 3 load client for the benchmarks.
 *
 *   sftp-load [options] MODE PATH -- SERVER [ARGS...]
 *
 * It starts SERVER with pipes on its stdin and stdout, sends INIT and runs one
 * scenario against PATH (a path on this machine, as the server sees it).
 * Every reply is matched to its request by id, every STATUS must be OK (or
 * EOF where EOF is due), and every byte read is compared with the source
 * pattern; anything else fails loudly with exit status 2. The result is one
 * line on stdout:
 *
 *   RESULT mode=... bytes=... seconds=... mib_s=... ops=... ops_s=...
 *          server_user=... server_sys=... server_cpu=... cpu_s_per_gib=...
 *          client_cpu=...
 *
 * seconds is CLOCK_MONOTONIC from the first request of the scenario to its
 * last reply; server_* is the server's own rusage from wait4().  listdir
 * adds complete=1 when it read the directory to its end, complete=0 when
 * --time-limit stopped it first (ops is then the entries it got).
 *
 * Data: byte o of a file made with seed S is byte (o mod P) of a pseudo-random
 * pattern generated from S, where P is not a multiple of any block size, so a
 * block at the wrong offset never matches. Memory is bounded: the pattern
 * (2 P), the input buffer (a few times the block size) and one slot per
 * request in flight.
 *
 * Helper modes that start no server:
 *   mkfile PATH   write SIZE bytes of the pattern to PATH
 *   mkdir PATH    create directory PATH holding COUNT empty files
 *   check PATH    compare the local file PATH with SIZE bytes of the pattern
 *   wrap FILE -- SERVER [ARGS...]
 *                 run SERVER on this process's stdin and stdout, write its
 *                 rusage to FILE when it exits (CPU seconds, context
 *                 switches and page faults), exit with its status (for
 *                 servers started by sftp -D or sshd, and tests/budget.sh)
 *   replay REPLIES REQUESTS
 *                 a server that does nothing but hand over replies, for
 *                 make bench's limit through sshd: sends the bytes of
 *                 REPLIES without copying them (splice into a pipe,
 *                 sendfile elsewhere) while a child checks that its
 *                 requests are the bytes of REQUESTS (both recorded from
 *                 a real server's session with the same client); fails on
 *                 any difference, ends once both are done
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <inttypes.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/sendfile.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <sys/uio.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define FXP_INIT 1
#define FXP_VERSION 2
#define FXP_OPEN 3
#define FXP_CLOSE 4
#define FXP_READ 5
#define FXP_WRITE 6
#define FXP_FSTAT 8
#define FXP_OPENDIR 11
#define FXP_READDIR 12
#define FXP_STATUS 101
#define FXP_HANDLE 102
#define FXP_DATA 103
#define FXP_NAME 104
#define FXP_ATTRS 105

#define FXF_READ 0x01
#define FXF_WRITE 0x02
#define FXF_CREAT 0x08
#define FXF_TRUNC 0x10

#define ATTR_SIZE 0x01
#define ATTR_UIDGID 0x02
#define ATTR_PERMISSIONS 0x04
#define ATTR_ACMODTIME 0x08
#define ATTR_EXTENDED 0x80000000u

#define FX_OK 0
#define FX_EOF 1

#define PAT_PERIOD ((4u << 20) + 4093)
#define MAX_BLOCK (4u << 20)
#define MAX_HANDLE 256
#define MAX_PATH 900
#define HDR_MAX 1024
#define MAX_SLOTS 65536
#define IOV_BATCH 64

struct req;

typedef void (*done_fn)(struct req *r, uint8_t type, const uint8_t *p,
                        size_t n);

struct req {
	uint32_t id;
	uint16_t gen;
	uint8_t busy;
	uint8_t queued;
	uint64_t off;
	uint32_t len;
	uint32_t file;
	done_fn done;
	const uint8_t *payload;
	uint32_t plen;
	uint32_t hlen;
	uint8_t hdr[HDR_MAX];
};

struct cur {
	const uint8_t *p;
	size_t n;
};

struct span {
	uint32_t file;
	uint32_t len;
	uint64_t off;
};

static struct {
	/* options */
	uint64_t size;
	uint32_t block;
	uint32_t depth;
	uint64_t count;
	uint32_t fsize;
	uint64_t seed;
	int verify;
	int timeout_ms;
	double time_limit; /* listdir: stop after this many seconds, 0: never */
	int listed_all;    /* listdir: reached the end of the directory */
	const char *mode;
	const char *path;

	/* connection */
	int fd_to;
	int fd_from;
	pid_t pid;
	uint8_t *in;
	size_t in_cap;
	size_t in_start;
	size_t in_end;

	/* requests */
	struct req *slots;
	uint32_t nslots;
	uint32_t *freel;
	uint32_t nfree;
	uint32_t *oq;
	uint32_t oq_head;
	uint32_t oq_count;
	size_t oq_off;
	uint32_t inflight;

	/* short-read retries */
	struct span *retry;
	uint32_t nretry;

	/* last reply of a synchronous call */
	uint8_t *sync_buf;
	size_t sync_len;
	uint8_t sync_type;
	int sync_done;

	/* the pattern, 2 * PAT_PERIOD bytes */
	uint8_t *pat;

	uint64_t ops;
	uint64_t bytes;
} g;

static void die(const char *fmt, ...)
    __attribute__((format(printf, 1, 2), noreturn));

static void die(const char *fmt, ...)
{
	va_list ap;

	fflush(stdout);
	fprintf(stderr, "sftp-load: FAIL: ");
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	exit(2);
}

static void *xcalloc(size_t n, size_t size)
{
	void *p = calloc(n ? n : 1, size ? size : 1);

	if (!p)
		die("out of memory");
	return p;
}

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

static uint64_t splitmix64(uint64_t *s)
{
	uint64_t z = (*s += 0x9e3779b97f4a7c15ull);

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}

static uint32_t get_be32(const uint8_t *p)
{
	return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 |
	       (uint32_t)p[2] << 8 | (uint32_t)p[3];
}

static void put_be32(uint8_t *p, uint32_t v)
{
	p[0] = v >> 24;
	p[1] = v >> 16;
	p[2] = v >> 8;
	p[3] = v;
}

/* --- parsing replies ----------------------------------------------------- */

static uint32_t cur_u32(struct cur *c)
{
	uint32_t v;

	if (c->n < 4)
		die("truncated reply");
	v = get_be32(c->p);
	c->p += 4;
	c->n -= 4;
	return v;
}

static uint64_t cur_u64(struct cur *c)
{
	uint64_t hi = cur_u32(c);

	return hi << 32 | cur_u32(c);
}

static const uint8_t *cur_str(struct cur *c, uint32_t *len)
{
	const uint8_t *p;

	*len = cur_u32(c);
	if (*len > c->n)
		die("truncated string in reply");
	p = c->p;
	c->p += *len;
	c->n -= *len;
	return p;
}

/* Parses ATTRS; returns the size, or UINT64_MAX when it is absent. */
static uint64_t cur_attrs(struct cur *c)
{
	uint32_t flags = cur_u32(c), len, i, n;
	uint64_t size = UINT64_MAX;

	if (flags & ATTR_SIZE)
		size = cur_u64(c);
	if (flags & ATTR_UIDGID)
		cur_u64(c);
	if (flags & ATTR_PERMISSIONS)
		cur_u32(c);
	if (flags & ATTR_ACMODTIME)
		cur_u64(c);
	if (flags & ATTR_EXTENDED) {
		n = cur_u32(c);
		for (i = 0; i < 2 * n; i++)
			cur_str(c, &len);
	}
	return size;
}

static const char *status_name(uint32_t code)
{
	static const char *const names[] = {
	    "OK",
	    "EOF",
	    "NO_SUCH_FILE",
	    "PERMISSION_DENIED",
	    "FAILURE",
	    "BAD_MESSAGE",
	    "NO_CONNECTION",
	    "CONNECTION_LOST",
	    "OP_UNSUPPORTED",
	};

	return code < sizeof(names) / sizeof(names[0]) ? names[code] : "?";
}

/* Returns the status code of a STATUS reply; dies on any other reply. */
static uint32_t status_of(uint8_t type, const uint8_t *p, size_t n,
                          const char *what)
{
	struct cur c = {p, n};
	uint32_t code;

	if (type != FXP_STATUS)
		die("%s: expected STATUS, got reply type %u", what, type);
	code = cur_u32(&c);
	return code;
}

static void expect_ok(uint8_t type, const uint8_t *p, size_t n,
                      const char *what)
{
	struct cur c = {p, n};
	const uint8_t *msg = (const uint8_t *)"";
	uint32_t code, mlen = 0;

	code = status_of(type, p, n, what);
	if (code == FX_OK)
		return;
	cur_u32(&c);
	if (c.n >= 4)
		msg = cur_str(&c, &mlen);
	die("%s: status %u (%s) \"%.*s\"", what, code, status_name(code),
	    (int)mlen, (const char *)msg);
}

/* --- the pattern --------------------------------------------------------- */

static void pat_init(uint64_t seed)
{
	uint64_t s = seed, v;
	uint32_t i;

	g.pat = xcalloc(2, PAT_PERIOD);
	for (i = 0; i < PAT_PERIOD; i += 8) {
		v = splitmix64(&s);
		memcpy(g.pat + i, &v, PAT_PERIOD - i < 8 ? PAT_PERIOD - i : 8);
	}
	memcpy(g.pat + PAT_PERIOD, g.pat, PAT_PERIOD);
}

/* The pattern bytes at file offset off for a file whose pattern starts at
 * base; up to PAT_PERIOD bytes are contiguous. */
static const uint8_t *pat_at(uint64_t base, uint64_t off)
{
	return g.pat + (base + off) % PAT_PERIOD;
}

static void verify(const char *what, const uint8_t *d, uint64_t base,
                   uint64_t off, size_t len)
{
	const uint8_t *e;
	size_t k, i;

	while (len) {
		k = len < PAT_PERIOD ? len : PAT_PERIOD;
		e = pat_at(base, off);
		if (memcmp(d, e, k)) {
			for (i = 0; d[i] == e[i]; i++)
				;
			die("DATA MISMATCH in %s at offset %" PRIu64
			    " (byte %02x, expected %02x)",
			    what, off + i, d[i], e[i]);
		}
		d += k;
		off += k;
		len -= k;
	}
}

/* Compares the local file path with SIZE bytes of the pattern. */
static void verify_file(const char *path, uint64_t base, uint64_t size)
{
	size_t bufsz = 1 << 20;
	uint8_t *buf;
	uint64_t off = 0;
	struct stat st;
	ssize_t n;
	int fd;

	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0 || fstat(fd, &st))
		die("verify %s: %s", path, strerror(errno));
	if (!S_ISREG(st.st_mode)) {
		close(fd);
		return;
	}
	if ((uint64_t)st.st_size != size)
		die("verify %s: size %jd, expected %" PRIu64, path,
		    (intmax_t)st.st_size, size);
	buf = xcalloc(1, bufsz);
	while (off < size) {
		n = read(fd, buf, bufsz);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			die("verify %s: read: %s", path,
			    n ? strerror(errno) : "early EOF");
		verify(path, buf, base, off, n);
		off += n;
	}
	free(buf);
	close(fd);
}

/* --- requests and the event loop ----------------------------------------- */

static void slots_init(uint32_t n)
{
	uint32_t i;

	if (n > MAX_SLOTS)
		n = MAX_SLOTS;
	g.nslots = n;
	g.slots = xcalloc(n, sizeof(*g.slots));
	g.freel = xcalloc(n, sizeof(*g.freel));
	g.oq = xcalloc(n, sizeof(*g.oq));
	g.retry = xcalloc(n, sizeof(*g.retry));
	for (i = 0; i < n; i++)
		g.freel[i] = n - 1 - i;
	g.nfree = n;
}

static void hdr_u8(struct req *r, uint8_t v)
{
	r->hdr[r->hlen++] = v;
}

static void hdr_u32(struct req *r, uint32_t v)
{
	put_be32(r->hdr + r->hlen, v);
	r->hlen += 4;
}

static void hdr_u64(struct req *r, uint64_t v)
{
	hdr_u32(r, v >> 32);
	hdr_u32(r, (uint32_t)v);
}

static void hdr_str(struct req *r, const void *s, uint32_t len)
{
	if (r->hlen + 4 + len > HDR_MAX - 32)
		die("request header too long");
	hdr_u32(r, len);
	memcpy(r->hdr + r->hlen, s, len);
	r->hlen += len;
}

static struct req *req_new(uint8_t type, done_fn done)
{
	struct req *r;
	uint32_t idx;

	if (!g.nfree)
		die("internal: no free request slot");
	idx = g.freel[--g.nfree];
	r = &g.slots[idx];
	r->gen++;
	r->id = (uint32_t)r->gen << 16 | idx;
	r->busy = 1;
	r->done = done;
	r->payload = NULL;
	r->plen = 0;
	r->hlen = 4;
	hdr_u8(r, type);
	hdr_u32(r, r->id);
	return r;
}

/* Queues r for sending; payload (plen bytes) follows the header unchanged. */
static void req_send(struct req *r, const uint8_t *payload, uint32_t plen)
{
	r->payload = payload;
	r->plen = plen;
	put_be32(r->hdr, r->hlen - 4 + plen);
	r->queued = 1;
	g.oq[(g.oq_head + g.oq_count) % g.nslots] = r - g.slots;
	g.oq_count++;
	g.inflight++;
	g.ops++;
}

static void flush_out(void)
{
	struct iovec iov[IOV_BATCH];
	size_t skip, rem;
	struct req *r;
	uint32_t i;
	ssize_t w;
	int n;

	while (g.oq_count) {
		n = 0;
		skip = g.oq_off;
		for (i = 0; i < g.oq_count && n < IOV_BATCH - 1; i++) {
			r = &g.slots[g.oq[(g.oq_head + i) % g.nslots]];
			if (skip < r->hlen) {
				iov[n].iov_base = r->hdr + skip;
				iov[n++].iov_len = r->hlen - skip;
				skip = 0;
			} else {
				skip -= r->hlen;
			}
			if (r->plen) {
				iov[n].iov_base = (void *)(r->payload + skip);
				iov[n++].iov_len = r->plen - skip;
			}
			skip = 0;
		}
		w = writev(g.fd_to, iov, n);
		if (w < 0) {
			if (errno == EINTR)
				continue;
			if (errno == EAGAIN)
				return;
			die("write to server: %s", strerror(errno));
		}
		while (w > 0) {
			r = &g.slots[g.oq[g.oq_head]];
			rem = r->hlen + r->plen - g.oq_off;
			if ((size_t)w < rem) {
				g.oq_off += w;
				break;
			}
			w -= rem;
			g.oq_off = 0;
			r->queued = 0;
			g.oq_head = (g.oq_head + 1) % g.nslots;
			g.oq_count--;
		}
	}
}

static void dispatch(const uint8_t *p, size_t n)
{
	uint32_t id, idx;
	struct req *r;
	uint8_t type;

	if (n < 5)
		die("reply too short (%zu bytes)", n);
	type = p[0];
	id = get_be32(p + 1);
	idx = id & 0xffff;
	if (idx >= g.nslots || !g.slots[idx].busy || g.slots[idx].id != id)
		die("reply (type %u) with unknown id %u", type, id);
	r = &g.slots[idx];
	if (r->queued)
		die("reply (type %u) to request %u before it was sent", type,
		    id);
	r->done(r, type, p + 5, n - 5);
	r->busy = 0;
	g.freel[g.nfree++] = idx;
	g.inflight--;
}

/* Reads what the server has sent and dispatches every complete reply. */
static void read_in(void)
{
	size_t avail, len;
	ssize_t n;

	if (g.in_cap - g.in_end < g.in_cap / 4 && g.in_start) {
		memmove(g.in, g.in + g.in_start, g.in_end - g.in_start);
		g.in_end -= g.in_start;
		g.in_start = 0;
	}
	n = read(g.fd_from, g.in + g.in_end, g.in_cap - g.in_end);
	if (n < 0) {
		if (errno == EINTR || errno == EAGAIN)
			return;
		die("read from server: %s", strerror(errno));
	}
	if (n == 0)
		die("server closed its output with %u requests in flight",
		    g.inflight);
	g.in_end += n;
	for (;;) {
		avail = g.in_end - g.in_start;
		if (avail < 4)
			break;
		len = get_be32(g.in + g.in_start);
		if (len > g.in_cap - 4)
			die("reply of %zu bytes exceeds the input buffer", len);
		if (avail < 4 + len) {
			if (g.in_cap - g.in_start < 4 + len) {
				memmove(g.in, g.in + g.in_start, avail);
				g.in_start = 0;
				g.in_end = avail;
			}
			break;
		}
		dispatch(g.in + g.in_start + 4, len);
		g.in_start += 4 + len;
	}
	if (g.in_start == g.in_end)
		g.in_start = g.in_end = 0;
}

/*
 * Runs the loop until finished() says so: fill() queues new requests, output
 * is written as the pipe takes it and replies are dispatched as they come.
 */
static void run(void (*fill)(void), int (*finished)(void))
{
	struct pollfd pfd[2];
	int r;

	for (;;) {
		if (fill)
			fill();
		if (finished())
			return;
		flush_out();
		pfd[0].fd = g.fd_from;
		pfd[0].events = POLLIN;
		pfd[1].fd = g.oq_count ? g.fd_to : -1;
		pfd[1].events = POLLOUT;
		r = poll(pfd, 2, g.timeout_ms);
		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0)
			die("poll: %s", strerror(errno));
		if (r == 0)
			die("no reply from the server for %d s (%u in flight)",
			    g.timeout_ms / 1000, g.inflight);
		if (pfd[1].revents & (POLLERR | POLLHUP))
			die("server closed its input");
		if (pfd[0].revents)
			read_in();
	}
}

/* --- synchronous calls --------------------------------------------------- */

static void sync_reply(struct req *r, uint8_t type, const uint8_t *p, size_t n)
{
	(void)r;
	memcpy(g.sync_buf, p, n);
	g.sync_len = n;
	g.sync_type = type;
	g.sync_done = 1;
}

static int sync_finished(void)
{
	return g.sync_done;
}

/* Sends r and waits for its reply, which lands in g.sync_*. */
static void call(struct req *r)
{
	g.sync_done = 0;
	req_send(r, NULL, 0);
	run(NULL, sync_finished);
}

static void do_init(void)
{
	uint8_t pkt[9];
	size_t off = 0;
	ssize_t n;
	uint32_t len;

	put_be32(pkt, 5);
	pkt[4] = FXP_INIT;
	put_be32(pkt + 5, 3);
	if (write(g.fd_to, pkt, sizeof(pkt)) != (ssize_t)sizeof(pkt))
		die("sending INIT: %s", strerror(errno));
	/* The VERSION reply has no id: read it directly. */
	for (;;) {
		struct pollfd pfd = {g.fd_from, POLLIN, 0};

		if (poll(&pfd, 1, g.timeout_ms) == 0)
			die("no VERSION from the server");
		n = read(g.fd_from, g.in + off, g.in_cap - off);
		if (n < 0 && (errno == EINTR || errno == EAGAIN))
			continue;
		if (n <= 0)
			die("server closed before VERSION: %s",
			    n ? strerror(errno) : "EOF");
		off += n;
		if (off < 4)
			continue;
		len = get_be32(g.in);
		if (len > g.in_cap - 4 || len < 5)
			die("bad VERSION length %u", len);
		if (off < 4 + len)
			continue;
		if (g.in[4] != FXP_VERSION || get_be32(g.in + 5) != 3)
			die("server did not answer INIT with VERSION 3");
		memmove(g.in, g.in + 4 + len, off - 4 - len);
		g.in_end = off - 4 - len;
		if (g.in_end)
			die("unexpected data after VERSION");
		return;
	}
}

static void do_open(const char *path, uint32_t pflags, uint8_t *h,
                    uint32_t *hlen)
{
	struct req *r = req_new(FXP_OPEN, sync_reply);
	struct cur c;
	const uint8_t *s;

	hdr_str(r, path, strlen(path));
	hdr_u32(r, pflags);
	if (pflags & FXF_CREAT) {
		hdr_u32(r, ATTR_PERMISSIONS);
		hdr_u32(r, 0644);
	} else {
		hdr_u32(r, 0);
	}
	call(r);
	if (g.sync_type != FXP_HANDLE)
		expect_ok(g.sync_type, g.sync_buf, g.sync_len, path);
	c.p = g.sync_buf;
	c.n = g.sync_len;
	s = cur_str(&c, hlen);
	if (*hlen > MAX_HANDLE)
		die("handle too long");
	memcpy(h, s, *hlen);
}

static void do_close(const uint8_t *h, uint32_t hlen, const char *what)
{
	struct req *r = req_new(FXP_CLOSE, sync_reply);

	hdr_str(r, h, hlen);
	call(r);
	expect_ok(g.sync_type, g.sync_buf, g.sync_len, what);
}

static uint64_t do_fstat(const uint8_t *h, uint32_t hlen)
{
	struct req *r = req_new(FXP_FSTAT, sync_reply);
	struct cur c;
	uint64_t size;

	hdr_str(r, h, hlen);
	call(r);
	if (g.sync_type != FXP_ATTRS)
		expect_ok(g.sync_type, g.sync_buf, g.sync_len, "FSTAT");
	c.p = g.sync_buf;
	c.n = g.sync_len;
	size = cur_attrs(&c);
	if (size == UINT64_MAX)
		die("FSTAT reply has no size");
	return size;
}

/* --- upload -------------------------------------------------------------- */

static struct {
	uint8_t h[MAX_HANDLE];
	uint32_t hlen;
	uint64_t next;
	uint64_t got;
	uint64_t size;
	int eof_sent;
	int eof_seen;
	uint64_t *offs;
	uint64_t noffs;
	uint64_t nexti;
} xf;

static void write_done(struct req *r, uint8_t type, const uint8_t *p, size_t n)
{
	expect_ok(type, p, n, "WRITE");
	g.bytes += r->len;
}

static void upload_fill(void)
{
	struct req *r;
	uint32_t len;

	while (g.inflight < g.depth && xf.next < xf.size) {
		len = xf.size - xf.next < g.block ? xf.size - xf.next : g.block;
		r = req_new(FXP_WRITE, write_done);
		r->off = xf.next;
		r->len = len;
		hdr_str(r, xf.h, xf.hlen);
		hdr_u64(r, xf.next);
		hdr_u32(r, len);
		req_send(r, pat_at(0, xf.next), len);
		xf.next += len;
	}
}

static int upload_finished(void)
{
	return xf.next == xf.size && !g.inflight;
}

static double upload(void)
{
	double t0 = now();

	do_open(g.path, FXF_WRITE | FXF_CREAT | FXF_TRUNC, xf.h, &xf.hlen);
	xf.size = g.size;
	run(upload_fill, upload_finished);
	do_close(xf.h, xf.hlen, "CLOSE after upload");
	return now() - t0;
}

/* --- download and random reads ------------------------------------------- */

static void send_read(uint32_t file, const uint8_t *h, uint32_t hlen,
                      uint64_t off, uint32_t len, done_fn done)
{
	struct req *r = req_new(FXP_READ, done);

	r->off = off;
	r->len = len;
	r->file = file;
	hdr_str(r, h, hlen);
	hdr_u64(r, off);
	hdr_u32(r, len);
	req_send(r, NULL, 0);
}

static void push_retry(uint32_t file, uint64_t off, uint32_t len)
{
	if (g.nretry == g.nslots)
		die("internal: retry list full");
	g.retry[g.nretry].file = file;
	g.retry[g.nretry].off = off;
	g.retry[g.nretry].len = len;
	g.nretry++;
}

/* Checks a DATA reply to r against the pattern at base and returns the
 * number of bytes, which may be fewer than asked for (the caller asks again
 * for the rest). */
static uint32_t data_reply(struct req *r, uint8_t type, const uint8_t *p,
                           size_t n, uint64_t base, const char *what)
{
	struct cur c = {p, n};
	const uint8_t *d;
	uint32_t len;

	if (type != FXP_DATA) {
		if (status_of(type, p, n, what) == FX_EOF)
			die("%s: unexpected EOF at offset %" PRIu64, what,
			    r->off);
		expect_ok(type, p, n, what);
		die("%s: STATUS OK instead of DATA", what);
	}
	d = cur_str(&c, &len);
	if (len > r->len)
		die("%s: %u bytes for a READ of %u", what, len, r->len);
	if (!len)
		die("%s: empty DATA at offset %" PRIu64, what, r->off);
	if (g.verify)
		verify(what, d, base, r->off, len);
	g.bytes += len;
	return len;
}

static void read_done(struct req *r, uint8_t type, const uint8_t *p, size_t n)
{
	uint32_t len;

	if (r->off == xf.size) {
		if (status_of(type, p, n, "READ at the end") != FX_EOF)
			die("READ at the end of the file did not give EOF");
		xf.eof_seen = 1;
		return;
	}
	len = data_reply(r, type, p, n, 0, "READ");
	if (len < r->len)
		push_retry(0, r->off + len, r->len - len);
	xf.got += len;
}

static void download_fill(void)
{
	struct span s;
	uint32_t len;

	while (g.inflight < g.depth) {
		if (g.nretry) {
			s = g.retry[--g.nretry];
			send_read(0, xf.h, xf.hlen, s.off, s.len, read_done);
		} else if (xf.next < xf.size) {
			len = xf.size - xf.next < g.block ? xf.size - xf.next
			                                  : g.block;
			send_read(0, xf.h, xf.hlen, xf.next, len, read_done);
			xf.next += len;
		} else if (!xf.eof_sent) {
			/* One READ at the end must say EOF. */
			send_read(0, xf.h, xf.hlen, xf.size, g.block,
			          read_done);
			xf.eof_sent = 1;
		} else {
			break;
		}
	}
}

static int download_finished(void)
{
	return xf.got == xf.size && xf.eof_seen && !g.inflight;
}

static double download(void)
{
	double t0 = now();

	do_open(g.path, FXF_READ, xf.h, &xf.hlen);
	xf.size = do_fstat(xf.h, xf.hlen);
	if (g.size && xf.size != g.size)
		die("%s has %" PRIu64 " bytes, expected %" PRIu64, g.path,
		    xf.size, g.size);
	run(download_fill, download_finished);
	do_close(xf.h, xf.hlen, "CLOSE after download");
	return now() - t0;
}

static void rand_done(struct req *r, uint8_t type, const uint8_t *p, size_t n)
{
	uint32_t len = data_reply(r, type, p, n, 0, "random READ");

	if (len < r->len)
		push_retry(0, r->off + len, r->len - len);
	xf.got += len;
}

static void randread_fill(void)
{
	struct span s;

	while (g.inflight < g.depth) {
		if (g.nretry) {
			s = g.retry[--g.nretry];
			send_read(0, xf.h, xf.hlen, s.off, s.len, rand_done);
		} else if (xf.nexti < g.count) {
			send_read(0, xf.h, xf.hlen,
			          xf.offs[xf.nexti % xf.noffs], g.block,
			          rand_done);
			xf.nexti++;
		} else {
			break;
		}
	}
}

static int randread_finished(void)
{
	return xf.nexti == g.count && !g.nretry && !g.inflight;
}

static double randread(void)
{
	uint64_t s = g.seed ^ 0x5eed, i, j, t;
	double t0;

	/* COUNT distinct block-aligned offsets in random order (a partial
	 * Fisher-Yates shuffle), so that no block is read twice while there
	 * are unread blocks. */
	if (g.size < g.block)
		die("randread: the file must have at least one block (-s)");
	xf.noffs = g.size / g.block;
	xf.offs = xcalloc(xf.noffs, sizeof(*xf.offs));
	for (i = 0; i < xf.noffs; i++)
		xf.offs[i] = i * g.block;
	for (i = 0; i < xf.noffs && i < g.count; i++) {
		j = i + splitmix64(&s) % (xf.noffs - i);
		t = xf.offs[i];
		xf.offs[i] = xf.offs[j];
		xf.offs[j] = t;
	}

	t0 = now();
	do_open(g.path, FXF_READ, xf.h, &xf.hlen);
	xf.size = do_fstat(xf.h, xf.hlen);
	if (xf.size < g.size)
		die("%s has %" PRIu64 " bytes, expected at least %" PRIu64,
		    g.path, xf.size, g.size);
	run(randread_fill, randread_finished);
	do_close(xf.h, xf.hlen, "CLOSE after random reads");
	return now() - t0;
}

/* --- many small files ---------------------------------------------------- */

enum { SF_FREE, SF_OPENING, SF_IO, SF_CLOSING };

struct sf_file {
	int state;
	int ready;
	uint32_t idx;
	uint32_t hlen;
	uint32_t pending;
	uint64_t next;
	uint64_t done;
	uint8_t h[MAX_HANDLE];
};

static struct {
	int writing;
	uint32_t nact;
	struct sf_file *act;
	uint32_t *readyq;
	uint32_t rq_head;
	uint32_t rq_count;
	uint32_t *freeact;
	uint32_t nfreeact;
	uint64_t started;
	uint64_t closed;
} sf;

static uint64_t sf_base(uint32_t idx)
{
	return (uint64_t)idx * 7919;
}

static void sf_name(char *buf, size_t len, uint32_t idx)
{
	if ((size_t)snprintf(buf, len, "%s/f%07u", g.path, idx) >= len)
		die("path too long");
}

static void sf_make_ready(uint32_t a)
{
	if (sf.act[a].ready)
		return;
	sf.act[a].ready = 1;
	sf.readyq[(sf.rq_head + sf.rq_count) % sf.nact] = a;
	sf.rq_count++;
}

static void sf_open_done(struct req *r, uint8_t type, const uint8_t *p,
                         size_t n)
{
	struct sf_file *f = &sf.act[r->file];
	struct cur c = {p, n};
	const uint8_t *s;

	if (type != FXP_HANDLE)
		expect_ok(type, p, n, "OPEN of a small file");
	s = cur_str(&c, &f->hlen);
	if (f->hlen > MAX_HANDLE)
		die("handle too long");
	memcpy(f->h, s, f->hlen);
	f->state = SF_IO;
	sf_make_ready(r->file);
}

static void sf_io_done(struct req *r, uint8_t type, const uint8_t *p, size_t n)
{
	struct sf_file *f = &sf.act[r->file];
	uint32_t len;

	f->pending--;
	if (sf.writing) {
		expect_ok(type, p, n, "WRITE of a small file");
		g.bytes += r->len;
		f->done += r->len;
	} else {
		len = data_reply(r, type, p, n, sf_base(f->idx),
		                 "READ of a small file");
		f->done += len;
		if (len < r->len) {
			/* A short read: ask for the rest now (one request
			 * in place of the one being answered). */
			send_read(r->file, f->h, f->hlen, r->off + len,
			          r->len - len, sf_io_done);
			f->pending++;
		}
	}
	if (f->done == g.fsize || f->next < g.fsize)
		sf_make_ready(r->file);
}

static void sf_close_done(struct req *r, uint8_t type, const uint8_t *p,
                          size_t n)
{
	expect_ok(type, p, n, "CLOSE of a small file");
	sf.act[r->file].state = SF_FREE;
	sf.freeact[sf.nfreeact++] = r->file;
	sf.closed++;
}

static void sf_issue(uint32_t a)
{
	struct sf_file *f = &sf.act[a];
	struct req *r;
	uint32_t len;

	if (f->next < g.fsize) {
		len = g.fsize - f->next < g.block ? g.fsize - f->next : g.block;
		if (sf.writing) {
			r = req_new(FXP_WRITE, sf_io_done);
			r->off = f->next;
			r->len = len;
			r->file = a;
			hdr_str(r, f->h, f->hlen);
			hdr_u64(r, f->next);
			hdr_u32(r, len);
			req_send(r, pat_at(sf_base(f->idx), f->next), len);
		} else {
			send_read(a, f->h, f->hlen, f->next, len, sf_io_done);
		}
		f->next += len;
		f->pending++;
		if (f->next < g.fsize)
			sf_make_ready(a);
	} else if (f->done == g.fsize && !f->pending) {
		r = req_new(FXP_CLOSE, sf_close_done);
		r->file = a;
		hdr_str(r, f->h, f->hlen);
		req_send(r, NULL, 0);
		f->state = SF_CLOSING;
	}
}

static void sf_fill(void)
{
	char name[MAX_PATH + 32];
	struct sf_file *f;
	struct req *r;
	uint32_t a;

	while (g.inflight < g.depth) {
		if (sf.rq_count) {
			a = sf.readyq[sf.rq_head];
			sf.rq_head = (sf.rq_head + 1) % sf.nact;
			sf.rq_count--;
			sf.act[a].ready = 0;
			sf_issue(a);
		} else if (sf.started < g.count && sf.nfreeact) {
			a = sf.freeact[--sf.nfreeact];
			f = &sf.act[a];
			memset(f, 0, sizeof(*f));
			f->idx = sf.started++;
			f->state = SF_OPENING;
			sf_name(name, sizeof(name), f->idx);
			r = req_new(FXP_OPEN, sf_open_done);
			r->file = a;
			hdr_str(r, name, strlen(name));
			if (sf.writing) {
				hdr_u32(r, FXF_WRITE | FXF_CREAT | FXF_TRUNC);
				hdr_u32(r, ATTR_PERMISSIONS);
				hdr_u32(r, 0644);
			} else {
				hdr_u32(r, FXF_READ);
				hdr_u32(r, 0);
			}
			req_send(r, NULL, 0);
		} else {
			break;
		}
	}
}

static int sf_finished(void)
{
	return sf.closed == g.count && !g.inflight;
}

static void sf_phase(int writing)
{
	uint32_t i;

	sf.writing = writing;
	sf.started = sf.closed = 0;
	sf.rq_head = sf.rq_count = 0;
	sf.nfreeact = 0;
	for (i = sf.nact; i-- > 0;) {
		sf.act[i].state = SF_FREE;
		sf.act[i].ready = 0;
		sf.freeact[sf.nfreeact++] = i;
	}
	run(sf_fill, sf_finished);
}

static double smallfiles(double *tw)
{
	double t0, t1;

	if (!g.fsize)
		die("smallfiles: the file size (-k) must not be 0");
	sf.nact = g.depth;
	sf.act = xcalloc(sf.nact, sizeof(*sf.act));
	sf.readyq = xcalloc(sf.nact, sizeof(*sf.readyq));
	sf.freeact = xcalloc(sf.nact, sizeof(*sf.freeact));
	t0 = now();
	sf_phase(1);
	t1 = now();
	sf_phase(0);
	*tw = t1 - t0;
	return now() - t0;
}

/* --- directory listing --------------------------------------------------- */

static double listdir(uint64_t *entries)
{
	uint8_t h[MAX_HANDLE];
	const uint8_t *name;
	uint32_t hlen, cnt, len, i;
	struct req *r;
	struct cur c;
	double t0 = now();
	const uint8_t *s;

	r = req_new(FXP_OPENDIR, sync_reply);
	hdr_str(r, g.path, strlen(g.path));
	call(r);
	if (g.sync_type != FXP_HANDLE)
		expect_ok(g.sync_type, g.sync_buf, g.sync_len, g.path);
	c.p = g.sync_buf;
	c.n = g.sync_len;
	s = cur_str(&c, &hlen);
	if (hlen > MAX_HANDLE)
		die("handle too long");
	memcpy(h, s, hlen);
	*entries = 0;
	g.listed_all = 0;
	for (;;) {
		if (g.time_limit > 0 && now() - t0 >= g.time_limit)
			break;
		r = req_new(FXP_READDIR, sync_reply);
		hdr_str(r, h, hlen);
		call(r);
		if (g.sync_type == FXP_STATUS &&
		    status_of(g.sync_type, g.sync_buf, g.sync_len, "READDIR") ==
		        FX_EOF) {
			g.listed_all = 1;
			break;
		}
		if (g.sync_type != FXP_NAME)
			expect_ok(g.sync_type, g.sync_buf, g.sync_len,
			          "READDIR");
		c.p = g.sync_buf;
		c.n = g.sync_len;
		cnt = cur_u32(&c);
		if (!cnt)
			die("READDIR: NAME with no entries");
		/* Count names other than . and .. */
		for (i = 0; i < cnt; i++) {
			name = cur_str(&c, &len);
			if (!(len == 1 && name[0] == '.') &&
			    !(len == 2 && name[0] == '.' && name[1] == '.'))
				(*entries)++;
			cur_str(&c, &len);
			cur_attrs(&c);
		}
		if (c.n)
			die("READDIR: %zu stray bytes after the names", c.n);
	}
	do_close(h, hlen, "CLOSE of the directory");
	if (g.listed_all ? g.count && *entries != g.count
	                 : g.count && *entries > g.count)
		die("listing of %s has %" PRIu64 " entries, expected %" PRIu64,
		    g.path, *entries, g.count);
	return now() - t0;
}

/* --- helper modes -------------------------------------------------------- */

static int mkfile(void)
{
	uint64_t off = 0;
	size_t k;
	ssize_t w;
	int fd;

	fd = open(g.path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	if (fd < 0)
		die("%s: %s", g.path, strerror(errno));
	while (off < g.size) {
		k = g.size - off < (1u << 20) ? g.size - off : (1u << 20);
		w = write(fd, pat_at(0, off), k);
		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0)
			die("%s: write: %s", g.path, strerror(errno));
		off += w;
	}
	if (close(fd))
		die("%s: close: %s", g.path, strerror(errno));
	return 0;
}

static int mkdir_entries(void)
{
	char name[64];
	uint64_t i;
	int dfd, fd;

	if (mkdir(g.path, 0755) && errno != EEXIST)
		die("mkdir %s: %s", g.path, strerror(errno));
	dfd = open(g.path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (dfd < 0)
		die("%s: %s", g.path, strerror(errno));
	for (i = 0; i < g.count; i++) {
		snprintf(name, sizeof(name), "entry-%010" PRIu64 "-abcdefgh",
		         i);
		fd = openat(dfd, name, O_WRONLY | O_CREAT | O_CLOEXEC, 0644);
		if (fd < 0)
			die("%s/%s: %s", g.path, name, strerror(errno));
		close(fd);
	}
	close(dfd);
	return 0;
}

/* Reads the requests to the end of stdin and checks them against the
 * recorded ones. */
static void replay_requests(int requests)
{
	static uint8_t got[1 << 16], want[1 << 16];
	ssize_t n, m, k;

	for (;;) {
		n = read(0, got, sizeof(got));
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			die("replay: read: %s", strerror(errno));
		if (n == 0)
			break;
		for (m = 0; m < n; m += k) {
			k = read(requests, want + m, (size_t)(n - m));
			if (k < 0)
				die("replay: the recorded requests: %s",
				    strerror(errno));
			if (k == 0)
				die("replay: the requests differ from the "
				    "recorded ones (more)");
		}
		if (memcmp(got, want, (size_t)n) != 0)
			die("replay: the requests differ from the recorded "
			    "ones");
	}
	if (read(requests, want, 1) != 0)
		die("replay: the requests differ from the recorded ones "
		    "(fewer)");
}

/* Sends all the replies without copying them: page references into a
 * pipe (splice), or sendfile to anything else.  Blocking, as OpenSSH's
 * server writes: woken inside the call when sshd has read. */
static void replay_replies(int replies, off_t size)
{
	loff_t off = 0;
	off_t at;
	int no_splice = 0;
	ssize_t n;

	while (off < size) {
		n = -1;
		if (!no_splice) {
			n = splice(replies, &off, 1, NULL, (size_t)(size - off),
			           0);
			if (n < 0 && errno == EINVAL)
				no_splice = 1;
		}
		if (no_splice) {
			at = (off_t)off;
			n = sendfile(1, replies, &at, (size_t)(size - off));
			off = at;
		}
		if (n == 0)
			die("replay: the replies ended early");
		if (n < 0 && errno != EINTR)
			die("replay: write: %s", strerror(errno));
	}
}

/* The replies do not wait for the requests: they go out from here while
 * a child reads the requests as they come and checks them (unread, they
 * would fill sshd's window on a long download).  Either failing fails
 * the replay; a client that stalls fails it after the timeout (-t). */
static int replay(const char *replies_path, const char *requests_path)
{
	int replies = open(replies_path, O_RDONLY | O_CLOEXEC);
	int requests = open(requests_path, O_RDONLY | O_CLOEXEC);
	struct stat st;
	int status;
	pid_t pid;

	if (replies < 0 || requests < 0 || fstat(replies, &st) != 0)
		die("replay: %s, %s: %s", replies_path, requests_path,
		    strerror(errno));
	signal(SIGPIPE, SIG_IGN);
	pid = fork();
	if (pid < 0)
		die("replay: fork: %s", strerror(errno));
	alarm((unsigned)(g.timeout_ms / 1000)); /* each its own */
	if (pid == 0) {
		close(1); /* stdout ends when the replies are out */
		replay_requests(requests);
		_exit(0);
	}
	close(0);
	fcntl(1, F_SETFL, fcntl(1, F_GETFL) & ~O_NONBLOCK);
	replay_replies(replies, st.st_size);
	close(1);
	while (waitpid(pid, &status, 0) < 0)
		if (errno != EINTR)
			die("replay: waitpid: %s", strerror(errno));
	return WIFEXITED(status) ? WEXITSTATUS(status) : 1;
}

static int wrap(char **argv)
{
	struct rusage ru;
	char tmp[PATH_MAX];
	int status, null;
	pid_t pid;
	FILE *f;

	pid = fork();
	if (pid < 0)
		die("fork: %s", strerror(errno));
	if (!pid) {
		execvp(argv[0], argv);
		fprintf(stderr, "sftp-load: exec %s: %s\n", argv[0],
		        strerror(errno));
		_exit(127);
	}
	/* Let the server alone hold the channel, so that EOF is seen as soon
	 * as it exits. */
	null = open("/dev/null", O_RDWR);
	if (null >= 0) {
		dup2(null, 0);
		dup2(null, 1);
		if (null > 1)
			close(null);
	}
	while (wait4(pid, &status, 0, &ru) < 0)
		if (errno != EINTR)
			die("wait4: %s", strerror(errno));
	snprintf(tmp, sizeof(tmp), "%s.tmp", g.path);
	f = fopen(tmp, "w");
	if (!f)
		die("%s: %s", tmp, strerror(errno));
	fprintf(f,
	        "server_user=%.6f server_sys=%.6f status=%d nvcsw=%ld "
	        "nivcsw=%ld minflt=%ld majflt=%ld\n",
	        ru.ru_utime.tv_sec + ru.ru_utime.tv_usec / 1e6,
	        ru.ru_stime.tv_sec + ru.ru_stime.tv_usec / 1e6,
	        WIFEXITED(status) ? WEXITSTATUS(status)
	                          : 128 + WTERMSIG(status),
	        ru.ru_nvcsw, ru.ru_nivcsw, ru.ru_minflt, ru.ru_majflt);
	if (fclose(f) || rename(tmp, g.path))
		die("%s: %s", g.path, strerror(errno));
	if (WIFSIGNALED(status))
		return 128 + WTERMSIG(status);
	return WEXITSTATUS(status);
}

/* --- the server ---------------------------------------------------------- */

static void spawn(char **argv)
{
	int to[2], from[2];

	if (pipe2(to, O_CLOEXEC) || pipe2(from, O_CLOEXEC))
		die("pipe: %s", strerror(errno));
	g.pid = fork();
	if (g.pid < 0)
		die("fork: %s", strerror(errno));
	if (!g.pid) {
		if (dup2(to[0], 0) < 0 || dup2(from[1], 1) < 0)
			_exit(127);
		execvp(argv[0], argv);
		fprintf(stderr, "sftp-load: exec %s: %s\n", argv[0],
		        strerror(errno));
		_exit(127);
	}
	close(to[0]);
	close(from[1]);
	g.fd_to = to[1];
	g.fd_from = from[0];
	fcntl(g.fd_to, F_SETFL, O_NONBLOCK);
	fcntl(g.fd_from, F_SETFL, O_NONBLOCK);
}

/* Closes the server's input and waits for it to exit; returns its rusage. */
static void reap(struct rusage *ru)
{
	uint8_t buf[4096];
	int status;
	ssize_t n;

	close(g.fd_to);
	fcntl(g.fd_from, F_SETFL, 0);
	for (;;) {
		n = read(g.fd_from, buf, sizeof(buf));
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			die("read from server: %s", strerror(errno));
		if (!n)
			break;
		die("server sent %zd unexpected bytes after the last reply", n);
	}
	close(g.fd_from);
	while (wait4(g.pid, &status, 0, ru) < 0)
		if (errno != EINTR)
			die("wait4: %s", strerror(errno));
	if (WIFSIGNALED(status))
		die("server killed by signal %d", WTERMSIG(status));
	if (WEXITSTATUS(status))
		die("server exited with status %d", WEXITSTATUS(status));
}

/* --- main ---------------------------------------------------------------- */

static uint64_t parse_size(const char *s, const char *what)
{
	unsigned long long v;
	char *end;

	errno = 0;
	v = strtoull(s, &end, 0);
	if (errno || end == s)
		die("bad %s: %s", what, s);
	switch (*end) {
	case 'k':
	case 'K':
		v <<= 10;
		end++;
		break;
	case 'm':
	case 'M':
		v <<= 20;
		end++;
		break;
	case 'g':
	case 'G':
		v <<= 30;
		end++;
		break;
	}
	if (*end)
		die("bad %s: %s", what, s);
	return v;
}

static void usage(FILE *f)
{
	fprintf(f,
	        "usage: sftp-load [options] MODE PATH -- SERVER [ARGS...]\n"
	        "       sftp-load [options] mkfile|mkdir|check PATH\n"
	        "       sftp-load wrap RUSAGE-FILE -- SERVER [ARGS...]\n"
	        "       sftp-load replay REPLIES REQUESTS\n"
	        "modes: upload download randread smallfiles listdir\n"
	        "  -s, --size=BYTES      file size (upload, mkfile; download "
	        "and randread check it) [256M]\n"
	        "  -b, --block=BYTES     request size [32768]\n"
	        "  -q, --depth=N         requests in flight [64]\n"
	        "  -n, --count=N         random reads, small files, directory "
	        "entries\n"
	        "  -k, --file-size=BYTES size of each small file [4096]\n"
	        "  -S, --seed=N          pattern and offsets [1]\n"
	        "      --no-verify       do not compare data\n"
	        "  -t, --timeout=SECONDS fail when the server stalls [120]\n"
	        "  -T, --time-limit=SECONDS  listdir: send no READDIR after "
	        "SECONDS\n"
	        "                        (the rate of what was listed; "
	        "complete=0)\n"
	        "Sizes take a K, M or G suffix (binary).\n");
}

int main(int argc, char **argv)
{
	static const struct option lopts[] = {
	    {"size", required_argument, NULL, 's'},
	    {"block", required_argument, NULL, 'b'},
	    {"depth", required_argument, NULL, 'q'},
	    {"count", required_argument, NULL, 'n'},
	    {"file-size", required_argument, NULL, 'k'},
	    {"seed", required_argument, NULL, 'S'},
	    {"no-verify", no_argument, NULL, 'V'},
	    {"timeout", required_argument, NULL, 't'},
	    {"time-limit", required_argument, NULL, 'T'},
	    {"help", no_argument, NULL, 'h'},
	    {NULL, 0, NULL, 0},
	};
	uint64_t entries = 0, v;
	struct rusage ru, self;
	double secs, tw = 0, su, ss, cpu;
	char **cmd;
	int c;

	/* Keep 0, 1 and 2 taken, so that no pipe lands on them. */
	while ((c = open("/dev/null", O_RDWR | O_CLOEXEC)) >= 0 && c <= 2)
		fcntl(c, F_SETFD, 0);
	if (c > 2)
		close(c);

	g.size = 256 << 20;
	g.block = 32768;
	g.depth = 64;
	g.fsize = 4096;
	g.seed = 1;
	g.verify = 1;
	g.timeout_ms = 120000;
	while ((c = getopt_long(argc, argv, "+s:b:q:n:k:S:t:T:h", lopts,
	                        NULL)) != -1) {
		switch (c) {
		case 's':
			g.size = parse_size(optarg, "size");
			break;
		case 'b':
			v = parse_size(optarg, "block");
			if (!v || v > MAX_BLOCK)
				die("block must be 1..%u", MAX_BLOCK);
			g.block = v;
			break;
		case 'q':
			v = parse_size(optarg, "depth");
			if (!v || v > MAX_SLOTS - 16)
				die("depth must be 1..%u", MAX_SLOTS - 16);
			g.depth = v;
			break;
		case 'n':
			g.count = parse_size(optarg, "count");
			break;
		case 'k':
			v = parse_size(optarg, "file size");
			if (v > UINT32_MAX)
				die("file size too large");
			g.fsize = v;
			break;
		case 'S':
			g.seed = parse_size(optarg, "seed");
			break;
		case 'V':
			g.verify = 0;
			break;
		case 't':
			g.timeout_ms = parse_size(optarg, "timeout") * 1000;
			break;
		case 'T':
			g.time_limit = (double)parse_size(optarg, "time limit");
			break;
		case 'h':
			usage(stdout);
			return 0;
		default:
			usage(stderr);
			return 1;
		}
	}
	if (argc - optind < 2) {
		usage(stderr);
		return 1;
	}
	g.mode = argv[optind];
	g.path = argv[optind + 1];
	if (strlen(g.path) > MAX_PATH)
		die("path too long");
	cmd = argv + optind + 2;
	if (*cmd && !strcmp(*cmd, "--"))
		cmd++;

	if (!strcmp(g.mode, "wrap")) {
		if (!*cmd)
			die("wrap: no server command");
		return wrap(cmd);
	}
	if (!strcmp(g.mode, "replay")) {
		if (!*cmd)
			die("replay: no requests file");
		return replay(g.path, *cmd);
	}
	pat_init(g.seed);
	if (!strcmp(g.mode, "mkfile"))
		return mkfile();
	if (!strcmp(g.mode, "mkdir"))
		return mkdir_entries();
	if (!strcmp(g.mode, "check")) {
		verify_file(g.path, 0, g.size);
		return 0;
	}
	if (!*cmd)
		die("no server command after --");

	signal(SIGPIPE, SIG_IGN);
	g.in_cap = 2 * ((size_t)g.block + 1024);
	if (g.in_cap < (1u << 20))
		g.in_cap = 1u << 20;
	g.in = xcalloc(1, g.in_cap);
	g.sync_buf = xcalloc(1, g.in_cap);
	slots_init(g.depth + 16);
	spawn(cmd);
	do_init();

	if (!strcmp(g.mode, "upload")) {
		secs = upload();
	} else if (!strcmp(g.mode, "download")) {
		secs = download();
	} else if (!strcmp(g.mode, "randread")) {
		if (!g.count)
			g.count = g.size / g.block;
		secs = randread();
	} else if (!strcmp(g.mode, "smallfiles")) {
		if (!g.count)
			die("smallfiles needs --count");
		secs = smallfiles(&tw);
	} else if (!strcmp(g.mode, "listdir")) {
		secs = listdir(&entries);
	} else {
		die("unknown mode %s", g.mode);
	}
	reap(&ru);

	if (!strcmp(g.mode, "upload") && g.verify)
		verify_file(g.path, 0, g.size);

	getrusage(RUSAGE_SELF, &self);
	su = ru.ru_utime.tv_sec + ru.ru_utime.tv_usec / 1e6;
	ss = ru.ru_stime.tv_sec + ru.ru_stime.tv_usec / 1e6;
	cpu = su + ss;
	if (!strcmp(g.mode, "listdir"))
		g.ops = entries;
	else if (!strcmp(g.mode, "randread"))
		g.ops = g.count;
	else if (!strcmp(g.mode, "smallfiles"))
		g.ops = 2 * g.count;
	printf("RESULT mode=%s bytes=%" PRIu64 " seconds=%.6f mib_s=%.2f"
	       " ops=%" PRIu64 " ops_s=%.1f server_user=%.4f"
	       " server_sys=%.4f server_cpu=%.4f cpu_s_per_gib=%.4f"
	       " client_cpu=%.4f",
	       g.mode, g.bytes, secs, g.bytes / 1048576.0 / secs, g.ops,
	       g.ops / secs, su, ss, cpu,
	       g.bytes ? cpu / (g.bytes / 1073741824.0) : 0.0,
	       self.ru_utime.tv_sec + self.ru_utime.tv_usec / 1e6 +
	           self.ru_stime.tv_sec + self.ru_stime.tv_usec / 1e6);
	if (!strcmp(g.mode, "smallfiles"))
		printf(" write_seconds=%.6f read_seconds=%.6f", tw, secs - tw);
	if (!strcmp(g.mode, "listdir"))
		printf(" complete=%d", g.listed_all);
	putchar('\n');
	return 0;
}
