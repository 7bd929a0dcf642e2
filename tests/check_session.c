/* SPDX-License-Identifier: ISC
 * Copyright (c) 2026 The uring-sftp-server developers.  See LICENSE. */
/* Unit tests of session.c, the event loop's decisions, run as main runs
 * them but with a fake stdin and stdout, the plain back end and real
 * files: the reader leaving, failing and short writes, what a READ reply
 * holds when the file changes before stdout takes it, the bound on READ
 * memory, and the read-ahead hints of the READs waiting for it. */
#include "config.h"

#include <check.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <syslog.h>
#include <unistd.h>

#include "backend.h"
#include "buf.h"
#include "coalesce.h"
#include "handle.h"
#include "input.h"
#include "log.h"
#include "output.h"
#include "queue.h"
#include "readmem.h"
#include "server.h"
#include "session.h"
#include "sftp.h"
#include "workers.h"

#define MS 1000000 /* ns */

/* ---- the client's side: a script of input, the output it gets ---- */

static uint8_t in_buf[1 << 20];
static size_t in_len, in_off;
static int in_open; /* no end of input yet: EAGAIN when all is read */

static uint8_t out_buf[8 << 20];
static size_t out_len;
static size_t out_room; /* per write */
static int out_fail;    /* errno for every write */
static int out_full;    /* stdout takes nothing (EAGAIN) */
static int64_t out_unread;

static ssize_t fake_read(void *buf, size_t len)
{
	if (in_off == in_len) {
		if (in_open) {
			errno = EAGAIN;
			return -1;
		}
		return 0;
	}
	if (len > in_len - in_off)
		len = in_len - in_off;
	memcpy(buf, in_buf + in_off, len);
	in_off += len;
	return (ssize_t)len;
}

static size_t fake_waiting(void)
{
	return in_len - in_off;
}

/* Whether the fake stdin says its reads never wait (a non-blocking pipe):
 * held input is then looked at by reading it. */
static int in_never_blocks;

static int fake_never_blocks(void)
{
	return in_never_blocks;
}

static const struct input_ops fake_in = {fake_read, fake_waiting,
                                         fake_never_blocks};

static ssize_t take(const void *p, size_t n)
{
	if (out_fail != 0 || out_full) {
		errno = out_fail != 0 ? out_fail : EAGAIN;
		return -1;
	}
	if (n > out_room)
		n = out_room;
	ck_assert_uint_le(out_len + n, sizeof(out_buf));
	if (p != NULL)
		memcpy(out_buf + out_len, p, n);
	out_len += n;
	out_unread += (int64_t)n;
	return (ssize_t)n;
}

static ssize_t fake_writev(const struct iovec *iov, int cnt)
{
	ssize_t n = 0, r;
	int i;

	for (i = 0; i < cnt; i++) {
		r = take(iov[i].iov_base, iov[i].iov_len);
		if (r < 0)
			return n > 0 ? n : r;
		n += r;
		if ((size_t)r < iov[i].iov_len)
			break;
	}
	return n;
}

static int64_t fake_unread(void)
{
	return out_unread;
}

static const struct output_ops fake_out = {
    .writev = fake_writev, .unread = fake_unread, .resize = NULL};

static void put(const void *p, size_t n)
{
	ck_assert_uint_le(in_len + n, sizeof(in_buf));
	memcpy(in_buf + in_len, p, n);
	in_len += n;
}

static void put_u32(uint32_t v)
{
	uint8_t b[4];

	poke_u32(b, v);
	put(b, 4);
}

static void put_u64(uint64_t v)
{
	put_u32((uint32_t)(v >> 32));
	put_u32((uint32_t)v);
}

static void put_string(const void *s, size_t n)
{
	put_u32((uint32_t)n);
	put(s, n);
}

/* A packet: its length is patched in by end(). */
static size_t begin(uint8_t type, uint32_t id)
{
	size_t at = in_len;

	put_u32(0);
	put(&type, 1);
	if (type != SSH2_FXP_INIT)
		put_u32(id);
	return at;
}

static void end(size_t at)
{
	poke_u32(in_buf + at, (uint32_t)(in_len - at - 4));
}

static void send_init(void)
{
	size_t at = begin(SSH2_FXP_INIT, 0);

	put_u32(3);
	end(at);
}

/* Handles are slot numbers, in order from 0 in a fresh session. */
static void send_open(uint32_t id, const char *name, uint32_t pflags)
{
	size_t at = begin(SSH2_FXP_OPEN, id);

	put_string(name, strlen(name));
	put_u32(pflags);
	put_u32(0); /* no attributes */
	end(at);
}

static void send_handle(uint32_t h)
{
	uint8_t b[4];

	poke_u32(b, h);
	put_string(b, 4);
}

static void send_read(uint32_t id, uint32_t h, uint64_t off, uint32_t len)
{
	size_t at = begin(SSH2_FXP_READ, id);

	send_handle(h);
	put_u64(off);
	put_u32(len);
	end(at);
}

static void send_write(uint32_t id, uint32_t h, uint64_t off, char c,
                       size_t len)
{
	static uint8_t data[65536];
	size_t at = begin(SSH2_FXP_WRITE, id);

	memset(data, c, len);
	send_handle(h);
	put_u64(off);
	put_string(data, len);
	end(at);
}

/* Replies in the output: how many, and the type of the last one. */
static unsigned count_replies(uint8_t *last_type)
{
	size_t off = 0;
	unsigned n = 0;
	uint32_t len;

	while (out_len - off >= 5) {
		len = peek_u32(out_buf + off);
		if (out_len - off - 4 < len)
			break;
		*last_type = out_buf[off + 4];
		off += 4 + len;
		n++;
	}
	return n;
}

/* ---- the session ---- */

static char dir[] = "/tmp/check_session.XXXXXX";

static void fatal_hook(int status)
{
	ck_abort_msg("fatal_exit(%d)", status);
}

static void setup(void)
{
	in_len = in_off = out_len = 0;
	in_open = 0;
	out_room = SIZE_MAX;
	out_fail = 0;
	out_full = 0;
	out_unread = 0;
	handle_close_all();
	queue_reset();
	srv.init_done = 0;
	output_init(&fake_out, 0);
	session_init(&fake_in);
}

/* Run turns until the session sleeps (returned: its plan) or ends (1). */
static int run(struct session_wait *w)
{
	int step, turns = 0;

	while ((step = session_turn()) != SESSION_DONE) {
		ck_assert_int_lt(++turns, 10000);
		if (step == SESSION_AGAIN)
			continue;
		session_plan(w, 0);
		/* Input and completions are there at once; room in stdout
		 * and the reader are what the tests control. */
		if (w->output && !out_full && out_fail == 0)
			session_wake(&(struct session_events){.output = 1}, 0);
		else if (w->input && (in_off < in_len || !in_open))
			session_wake(&(struct session_events){.input = 1}, 0);
		else if (w->timeout_ns == 0)
			session_wake(&(struct session_events){.timed_out = 1},
			             0);
		else
			return 0;
	}
	return 1;
}

static void write_file(const char *name, char c, size_t len)
{
	static char data[65536];
	int fd = open(name, O_WRONLY | O_CREAT | O_TRUNC, 0644);

	memset(data, c, len);
	ck_assert_int_ge(fd, 0);
	ck_assert_int_eq(write(fd, data, len), (ssize_t)len);
	close(fd);
}

static char file_byte(const char *name, off_t off)
{
	char c = 0;
	int fd = open(name, O_RDONLY);

	ck_assert_int_ge(fd, 0);
	ck_assert_int_eq(pread(fd, &c, 1, off), 1);
	close(fd);
	return c;
}

START_TEST(test_backoff)
{
	ck_assert_int_eq(session_backoff(0, 0, MS), MS);
	ck_assert_int_eq(session_backoff(MS, 0, MS), 2 * MS);
	ck_assert_int_eq(session_backoff(64 * MS, 0, MS),
	                 SESSION_RECHECK_MAX_NS);
	ck_assert_int_eq(session_backoff(SESSION_RECHECK_MAX_NS, 0, MS),
	                 SESSION_RECHECK_MAX_NS);
	ck_assert_int_eq(session_backoff(SESSION_RECHECK_MAX_NS, 1, MS), MS);
}
END_TEST

/* Held stdin is looked at once per SESSION_HELD_LOOK_NS: never looked at,
 * or looked at that long ago or more, it is due now; else it is due when
 * the interval ends.  A clock that went back (a saved time from another
 * clock) makes it due, never a wait that does not end. */
START_TEST(test_held_look)
{
	const int64_t t = (int64_t)5000 * MS, look = SESSION_HELD_LOOK_NS;

	ck_assert_int_eq(session_held_look_in(0, t), 0);
	ck_assert_int_eq(session_held_look_in(t, t), look);
	ck_assert_int_eq(session_held_look_in(t, t + look / 4), 3 * look / 4);
	ck_assert_int_eq(session_held_look_in(t, t + look - 1), 1);
	ck_assert_int_eq(session_held_look_in(t, t + look), 0);
	ck_assert_int_eq(session_held_look_in(t, t + 10 * look), 0);
	ck_assert_int_eq(session_held_look_in(t, t - 1), 0);
}
END_TEST

START_TEST(test_short_writes_give_whole_replies)
{
	struct session_wait w;
	uint8_t type = 0;
	int i;

	write_file("f", 'A', 65536);
	send_init();
	send_open(1, "f", SSH2_FXF_READ);
	for (i = 0; i < 8; i++)
		send_read(10 + i, 0, (uint64_t)i * 8192, 8192);
	out_room = 7;
	ck_assert_int_eq(run(&w), 1);
	ck_assert_int_eq(session_exit_status(&(const char *){NULL}), 0);
	ck_assert_uint_eq(count_replies(&type), 10);
	ck_assert_int_eq(type, SSH2_FXP_DATA);
}
END_TEST

START_TEST(test_failing_output_ends_the_session)
{
	struct session_wait w;
	const char *fatal = "x";

	send_init();
	in_open = 1;
	out_fail = EIO;
	ck_assert_int_eq(run(&w), 1);
	ck_assert_int_eq(session_exit_status(&fatal), 1);
	ck_assert_ptr_null(fatal);
}
END_TEST

/* The reader leaves (EPIPE): every request received is still carried
 * out, and the session ends with stdin. */
START_TEST(test_vanished_reader_requests_are_carried_out)
{
	struct session_wait w;
	const char *fatal;

	write_file("g", 'A', 4096);
	send_init();
	send_open(1, "g", SSH2_FXF_READ | SSH2_FXF_WRITE);
	out_fail = EPIPE;
	send_write(2, 0, 0, 'B', 4096);
	send_read(3, 0, 0, 4096);
	send_write(4, 0, 4096, 'C', 100);
	ck_assert_int_eq(run(&w), 1);
	ck_assert_int_eq(session_exit_status(&fatal), 0);
	ck_assert_ptr_null(fatal);
	ck_assert_int_eq(output_gone(), 1);
	ck_assert_int_eq(file_byte("g", 0), 'B');
	ck_assert_int_eq(file_byte("g", 4096 + 99), 'C');
}
END_TEST

/* A file of n bytes whose byte i is i * 7 % 251, in the page cache. */
static void write_pattern(const char *name, size_t n)
{
	static uint8_t data[65536];
	int fd = open(name, O_WRONLY | O_CREAT | O_TRUNC, 0644);
	size_t i, done, len;

	ck_assert_int_ge(fd, 0);
	for (done = 0; done < n; done += len) {
		len = n - done < sizeof(data) ? n - done : sizeof(data);
		for (i = 0; i < len; i++)
			data[i] = (uint8_t)((done + i) * 7 % 251);
		ck_assert_int_eq(write(fd, data, len), (ssize_t)len);
	}
	close(fd);
}

/* INIT, then OPEN of name for reading, answered: the handle (the tests
 * share one process, so handles are not numbered from 0).  The replies
 * after it begin at *replies. */
static uint32_t open_for_reading(const char *name, size_t *replies)
{
	struct session_wait w;
	size_t at;

	send_init();
	send_open(1, name, SSH2_FXF_READ);
	in_open = 1;
	ck_assert_int_eq(run(&w), 0);
	at = 4 + peek_u32(out_buf);
	ck_assert_uint_eq(out_len, at + 4 + 1 + 4 + 4 + 4);
	ck_assert_int_eq(out_buf[at + 4], SSH2_FXP_HANDLE);
	ck_assert_uint_eq(peek_u32(out_buf + at + 9), 4);
	*replies = out_len;
	in_open = 0;
	return peek_u32(out_buf + at + 13);
}

/* The reply at out_buf[at]: a DATA of len bytes of write_pattern from
 * off. */
static void check_data(size_t at, uint32_t id, uint64_t off, uint32_t len)
{
	uint32_t i;

	ck_assert_uint_ge(out_len, at + 13 + len);
	ck_assert_uint_eq(peek_u32(out_buf + at), 9 + len);
	ck_assert_int_eq(out_buf[at + 4], SSH2_FXP_DATA);
	ck_assert_uint_eq(peek_u32(out_buf + at + 5), id);
	ck_assert_uint_eq(peek_u32(out_buf + at + 9), len);
	for (i = 0; i < len; i++)
		ck_assert_int_eq(out_buf[at + 13 + i],
		                 (uint8_t)((off + i) * 7 % 251));
}

/* Two READs of a file (64 KiB of write_pattern), the second to its end,
 * through a stdout that takes 7000 bytes a write: both replies whole and
 * in order, header and data together, and the session ends well. */
START_TEST(test_reads_reach_stdout_whole)
{
	struct session_wait w;
	const char *fatal;
	size_t first;
	uint32_t h;

	write_pattern("d", 65536);
	h = open_for_reading("d", &first);
	out_room = 7000;
	send_read(2, h, 1000, 30000);
	send_read(3, h, 40000, 30000); /* 25536 bytes to the end */
	ck_assert_int_eq(run(&w), 1);
	ck_assert_int_eq(session_exit_status(&fatal), 0);
	check_data(first, 2, 1000, 30000);
	check_data(first + 13 + 30000, 3, 40000, 25536);
	ck_assert_uint_eq(out_len, first + 2 * 13 + 30000 + 25536);
	ck_assert_int_eq(readmem_reclaimable(), 1);
}
END_TEST

/* Truncate name to len bytes, and rewrite its first bytes with 'Z', as
 * another program would while our replies wait for stdout. */
static void change_file(const char *name, off_t len)
{
	int fd = open(name, O_WRONLY);

	ck_assert_int_ge(fd, 0);
	ck_assert_int_eq(ftruncate(fd, len), 0);
	ck_assert_int_eq(pwrite(fd, "ZZZZ", 4, 0), 4);
	close(fd);
}

/* A READ's reply holds what the file held when the read ran: the file
 * truncated and rewritten while the reply waits for a full stdout
 * changes nothing in it.  READs beyond READ memory wait, parsed, and run
 * only once earlier replies have gone out: those see the file as it is
 * then (here: past its new end, EOF).  A session starts with READ
 * memory's smallest window (footprint.h), in which a READ of the largest
 * size runs alone, and no reader's rate has widened it yet. */
START_TEST(test_read_holds_what_the_file_held)
{
	enum { N = 12, LEN = SFTP_MAX_READ_LENGTH };
	struct session_wait w;
	const char *fatal;
	size_t first, at;
	uint8_t type;
	uint32_t h;
	int i, ran = 1;

	write_pattern("t", (size_t)N * LEN);
	h = open_for_reading("t", &first);
	out_full = 1;
	in_open = 1;
	for (i = 0; i < N; i++)
		send_read(10 + (uint32_t)i, h, (uint64_t)i * LEN, LEN);
	ck_assert_int_eq(run(&w), 0);
	ck_assert_uint_eq(out_len, first);
	/* Nothing of the file's is held: another program goes ahead. */
	change_file("t", LEN);
	out_full = 0;
	in_open = 0;
	ck_assert_int_eq(run(&w), 1);
	ck_assert_int_eq(session_exit_status(&fatal), 0);
	at = first;
	for (i = 0; i < ran; i++) {
		check_data(at, 10 + (uint32_t)i, (uint64_t)i * LEN, LEN);
		at += 13 + LEN;
	}
	/* The rest ran after the truncation: EOF, no byte invented. */
	ck_assert_uint_eq(count_replies(&type), 2 + N);
	ck_assert_int_eq(type, SSH2_FXP_STATUS);
	for (; i < N; i++) {
		ck_assert_int_eq(out_buf[at + 4], SSH2_FXP_STATUS);
		ck_assert_uint_eq(peek_u32(out_buf + at + 9), SSH2_FX_EOF);
		at += 4 + peek_u32(out_buf + at);
	}
	ck_assert_uint_eq(at, out_len);
}
END_TEST

/* The back end, spied on: the read-ahead hints it is given. */
static int (*real_submit)(struct io_op *op);
static uint64_t hint_off[32], hint_len[32];
static unsigned num_hints;

static int spy_submit(struct io_op *op)
{
	if (op->opcode == IO_READAHEAD && num_hints < 32) {
		hint_off[num_hints] = op->offset;
		hint_len[num_hints++] = op->len;
	}
	return real_submit(op);
}

/* READs of a sequential stream beyond READ memory wait, and the kernel is
 * asked at once to read what they will want ahead: the device sees the
 * client's depth.  Further than the stream's own window reaches (4 MiB
 * beyond the first READ) by more than a step (2 MiB), and past the end
 * of the file, so that no
 * page cache holds all of it (on any file system) and a hint goes out;
 * the window itself is cached (the file was just written): no hint. */
START_TEST(test_waiting_reads_get_read_ahead_hints)
{
	enum { N = 28, HELD = 18, LEN = SFTP_MAX_READ_LENGTH };
	const struct io_backend *real = backend;
	struct io_backend spy = *backend;
	struct session_wait w;
	const char *fatal;
	size_t first;
	uint8_t type;
	uint32_t h;
	unsigned i, ran = READMEM_BYTES / (13 + LEN);

	write_pattern("w", (size_t)HELD * LEN);
	h = open_for_reading("w", &first);
	/* As on ext4, xfs or btrfs, whatever /tmp is. */
	handle_get((int)h, HANDLE_FILE)->hint_waiting = 1;
	real_submit = real->submit;
	spy.submit = spy_submit;
	backend = &spy;
	num_hints = 0;
	/* Room to take in all N, as with --queue-depth=64. */
	queue_init(&(struct queue_limits){64, 32 * 1024 * 1024});
	out_full = 1;
	in_open = 1;
	for (i = 0; i < N; i++)
		send_read(10 + i, h, (uint64_t)i * LEN, LEN);
	ck_assert_int_eq(run(&w), 0);
	/* One hint, for the waiting READs, up to the end of the last. */
	ck_assert_uint_eq(num_hints, 1);
	ck_assert_uint_ge(hint_off[0], (uint64_t)ran * LEN);
	ck_assert_uint_eq(hint_off[0] + hint_len[0], (uint64_t)N * LEN);
	/* They run once replies go out, and read what the file holds. */
	out_full = 0;
	in_open = 0;
	ck_assert_int_eq(run(&w), 1);
	backend = real;
	queue_init(&(struct queue_limits){16, 1024 * 1024});
	ck_assert_int_eq(session_exit_status(&fatal), 0);
	ck_assert_uint_eq(count_replies(&type), 2 + N);
	ck_assert_int_eq(type, SSH2_FXP_STATUS);
	for (i = 0; i < HELD; i++)
		check_data(first + i * (13 + LEN), 10 + i, (uint64_t)i * LEN,
		           LEN);
}
END_TEST

/* Held stdin (READs wait for READ memory that only a full stdout will
 * free) is not watched by the sleep; the turn looks at it and reads what
 * waits there itself, going round for it, where the plan used to ask the
 * sleep to report bytes it had already seen. */
START_TEST(test_held_input_read_by_the_turn)
{
	enum { N = 12, LEN = SFTP_MAX_READ_LENGTH };
	/* _i: a stdin whose reads may block (looked at with FIONREAD first),
	 * then one whose reads never do (the read is the look). */
	struct session_wait w;
	const char *fatal;
	size_t first;
	uint8_t type;
	uint32_t h;
	unsigned before;

	in_never_blocks = _i;
	write_pattern("held", (size_t)N * LEN);
	h = open_for_reading("held", &first);
	queue_init(&(struct queue_limits){64, 32 * 1024 * 1024});
	out_full = 1;
	in_open = 1;
	for (unsigned i = 0; i < N; i++)
		send_read(10 + i, h, (uint64_t)i * LEN, LEN);
	ck_assert_int_eq(run(&w), 0);
	ck_assert(readmem_waiting());
	ck_assert_int_eq(w.input, 0);
	ck_assert_int_gt(w.timeout_ns, 0); /* a recheck, not a watch */
	/* A request arrives: the next turn reads and admits it, with no
	 * wake-up for input. */
	before = queue_count();
	send_read(10 + N, h, 0, 4);
	ck_assert_int_eq(session_turn(), SESSION_AGAIN);
	ck_assert_int_eq(session_turn(), SESSION_WAIT);
	ck_assert_uint_eq(queue_count(), before + 1);
	ck_assert_uint_eq(fake_waiting(), 0);
	out_full = 0;
	in_open = 0;
	ck_assert_int_eq(run(&w), 1);
	queue_init(&(struct queue_limits){16, 1024 * 1024});
	ck_assert_int_eq(session_exit_status(&fatal), 0);
	ck_assert_uint_eq(count_replies(&type), 2 + N + 1);
	ck_assert_int_eq(type, SSH2_FXP_DATA);
	in_never_blocks = 0;
}
END_TEST

/* An OPEN for writing and a WRITE on a file whose READ reply waits for
 * stdout run at once: nothing waits for the reader, and the reply keeps
 * the bytes the READ read. */
START_TEST(test_nothing_waits_for_the_reader)
{
	struct session_wait w;
	const char *fatal;
	uint8_t type;
	uint32_t i;

	write_file("h", 'A', 65536);
	send_init();
	send_open(1, "h", SSH2_FXF_READ);
	send_read(2, 0, 0, 65536);
	send_open(3, "h", SSH2_FXF_WRITE);
	send_write(4, 1, 0, 'B', 1000);
	in_open = 1;
	out_full = 1;
	ck_assert_int_eq(run(&w), 0);
	/* Nothing went out, yet the WRITE is in the file, and the session
	 * sleeps on stdout with no timer to look again. */
	ck_assert_uint_eq(out_len, 0);
	ck_assert_int_eq(file_byte("h", 0), 'B');
	session_plan(&w, 0);
	ck_assert_int_eq(w.timeout_ns, -1);
	out_full = 0;
	in_open = 0;
	ck_assert_int_eq(run(&w), 1);
	ck_assert_int_eq(session_exit_status(&fatal), 0);
	ck_assert_uint_eq(count_replies(&type), 5);
	/* The DATA, third reply, holds the 'A's the READ read. */
	{
		size_t at = 4 + peek_u32(out_buf);

		at += 4 + peek_u32(out_buf + at);
		ck_assert_int_eq(out_buf[at + 4], SSH2_FXP_DATA);
		ck_assert_uint_eq(peek_u32(out_buf + at + 9), 65536);
		for (i = 0; i < 65536; i++)
			ck_assert_int_eq(out_buf[at + 13 + i], 'A');
	}
}
END_TEST

int main(void)
{
	Suite *s = suite_create("session");
	TCase *tc = tcase_create("session");
	SRunner *sr;
	int failed, rc;

	signal(SIGPIPE, SIG_IGN);
	if (mkdtemp(dir) == NULL || chdir(dir) != 0) {
		perror(dir);
		return 1;
	}
	srv.user = "check";
	srv.home = dir;
	srv.client_addr = "UNKNOWN";
	srv.opt.queue_depth = 16;
	srv.opt.write_merge = 256 * 1024;
	log_init("check_session", LOG_LEVEL_ERROR, LOG_AUTH, 1);
	log_set_cleanup(fatal_hook);
	handle_set_limit(64);
	queue_init(&(struct queue_limits){16, 1024 * 1024});
	coalesce_init(srv.opt.write_merge);
	/* One thread, as the plain back end: what a worker would do is done
	 * at submit time, in order. */
	workers_run_inline(1);
	if ((rc = backend_start(BACKEND_PLAIN, 16)) != 0 ||
	    input_init(1024 * 1024, 16) != 0 || readmem_init(16) != 0) {
		fprintf(stderr, "cannot set up: %s\n", strerror(-rc));
		return 1;
	}

	tcase_add_checked_fixture(tc, setup, NULL);
	tcase_add_test(tc, test_backoff);
	tcase_add_test(tc, test_held_look);
	tcase_add_loop_test(tc, test_held_input_read_by_the_turn, 0, 2);
	tcase_add_test(tc, test_short_writes_give_whole_replies);
	tcase_add_test(tc, test_failing_output_ends_the_session);
	tcase_add_test(tc, test_vanished_reader_requests_are_carried_out);
	tcase_add_test(tc, test_reads_reach_stdout_whole);
	tcase_add_test(tc, test_read_holds_what_the_file_held);
	tcase_add_test(tc, test_nothing_waits_for_the_reader);
	tcase_add_test(tc, test_waiting_reads_get_read_ahead_hints);
	suite_add_tcase(s, tc);
	sr = srunner_create(s);
	/* One process: the session's state lives across the tests. */
	srunner_set_fork_status(sr, CK_NOFORK);
	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	handle_close_all();
	return failed == 0 ? 0 : 1;
}
