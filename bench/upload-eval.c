/* SPDX-License-Identifier: ISC
 * Copyright (c) 2026 The uring-sftp-server developers.  See LICENSE. */
/* upload-eval: measures the two ways an upload's payload can reach a file
 * (splice from stdin for WRITE payloads, against large reads into the input
 * buffer).  A writer process sends framed packets
 * (4-byte length, then payload, like SFTP WRITEs) through a pipe or a
 * socketpair; the reader either
 *   copy:   reads 1 MiB at a time into a buffer and pwrite()s each payload
 *           from there (what the server does), or
 *   splice: reads each 4-byte header, then splices the payload from the
 *           pipe into the file (a socket goes through a private pipe
 *           first: splice cannot move socket bytes straight to a file).
 * It prints the reader's CPU seconds per GiB.
 *
 *   upload-eval copy|splice pipe|socket FILE [MiB] [payload bytes]
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

static void die(const char *what)
{
	perror(what);
	exit(1);
}

static void write_all(int fd, const void *p, size_t n)
{
	const char *c = p;
	ssize_t w;

	for (; n > 0; n -= (size_t)w, c += w)
		if ((w = write(fd, c, n)) <= 0)
			die("write");
}

static void writer(int fd, uint64_t total, uint32_t payload)
{
	char *buf = malloc(payload + 4);
	uint64_t sent;

	memset(buf, 'x', payload + 4);
	for (sent = 0; sent < total; sent += payload) {
		buf[0] = (char)(payload >> 24);
		buf[1] = (char)(payload >> 16);
		buf[2] = (char)(payload >> 8);
		buf[3] = (char)payload;
		write_all(fd, buf, payload + 4);
	}
	close(fd);
	exit(0);
}

/* Large reads into a buffer; each payload written from where it lies. */
static void read_copy(int in, int out)
{
	size_t cap = 1 << 20, have = 0, pos, len;
	char *buf = malloc(cap);
	uint64_t off = 0;
	ssize_t n;

	for (;;) {
		n = read(in, buf + have, cap - have);
		if (n < 0)
			die("read");
		if (n == 0)
			break;
		have += (size_t)n;
		for (pos = 0; have - pos >= 4; pos += 4 + len) {
			len = (size_t)((uint8_t)buf[pos] << 24 |
			               (uint8_t)buf[pos + 1] << 16 |
			               (uint8_t)buf[pos + 2] << 8 |
			               (uint8_t)buf[pos + 3]);
			if (have - pos - 4 < len)
				break;
			if (pwrite(out, buf + pos + 4, len, (off_t)off) !=
			    (ssize_t)len)
				die("pwrite");
			off += len;
		}
		memmove(buf, buf + pos, have - pos);
		have -= pos;
	}
}

static void read_exact(int fd, void *p, size_t n)
{
	char *c = p;
	ssize_t r;

	for (; n > 0; n -= (size_t)r, c += r)
		if ((r = read(fd, c, n)) <= 0)
			die("read header");
}

/* One header read, then the payload spliced (through a pipe if needed). */
static void read_splice(int in, int out, int in_is_pipe)
{
	uint8_t h[4];
	loff_t off = 0;
	int p[2];
	size_t len, moved;
	ssize_t n;

	if (!in_is_pipe &&
	    (pipe(p) == -1 || fcntl(p[1], F_SETPIPE_SZ, 1 << 20) == -1))
		die("pipe");
	for (;;) {
		n = read(in, h, 1);
		if (n == 0)
			break;
		if (n < 0)
			die("read");
		read_exact(in, h + 1, 3);
		len = (size_t)h[0] << 24 | (size_t)h[1] << 16 |
		      (size_t)h[2] << 8 | h[3];
		for (; len > 0; len -= moved) {
			if (in_is_pipe) {
				n = splice(in, NULL, out, &off, len,
				           SPLICE_F_MOVE);
				if (n <= 0)
					die("splice");
				moved = (size_t)n;
				continue;
			}
			n = splice(in, NULL, p[1], NULL, len, SPLICE_F_MOVE);
			if (n <= 0)
				die("splice in");
			moved = (size_t)n;
			while (n > 0) {
				ssize_t m = splice(p[0], NULL, out, &off,
				                   (size_t)n, SPLICE_F_MOVE);
				if (m <= 0)
					die("splice out");
				n -= m;
			}
		}
	}
}

int main(int argc, char **argv)
{
	uint64_t mib = argc > 4 ? strtoull(argv[4], NULL, 10) : 1024;
	uint32_t payload = argc > 5 ? (uint32_t)atoi(argv[5]) : 261120;
	int fds[2], out, is_pipe;
	struct rusage ru;
	pid_t pid;

	if (argc < 4) {
		fprintf(stderr, "usage: upload-eval copy|splice pipe|socket "
		                "FILE [MiB] [payload]\n");
		return 2;
	}
	is_pipe = strcmp(argv[2], "pipe") == 0;
	if (is_pipe ? pipe(fds) : socketpair(AF_UNIX, SOCK_STREAM, 0, fds))
		die("pipe/socketpair");
	if (is_pipe)
		(void)fcntl(fds[1], F_SETPIPE_SZ, 1 << 20);
	if ((pid = fork()) == 0) {
		close(fds[0]);
		writer(fds[1], mib << 20, payload);
	}
	close(fds[1]);
	if ((out = open(argv[3], O_WRONLY | O_CREAT | O_TRUNC, 0644)) == -1)
		die(argv[3]);
	if (strcmp(argv[1], "splice") == 0)
		read_splice(fds[0], out, is_pipe);
	else
		read_copy(fds[0], out);
	waitpid(pid, NULL, 0);
	getrusage(RUSAGE_SELF, &ru);
	printf("%s %s: reader CPU %.3f s/GiB (user %.3f sys %.3f)\n", argv[1],
	       argv[2],
	       (ru.ru_utime.tv_sec + ru.ru_utime.tv_usec / 1e6 +
	        ru.ru_stime.tv_sec + ru.ru_stime.tv_usec / 1e6) *
	           1024 / (double)mib,
	       ru.ru_utime.tv_sec + ru.ru_utime.tv_usec / 1e6,
	       ru.ru_stime.tv_sec + ru.ru_stime.tv_usec / 1e6);
	return 0;
}
