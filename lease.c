/* SPDX-License-Identifier: ISC
 * Copyright (c) 2026 The uring-sftp-server developers.  See LICENSE. */
/* Read leases on spliced files; see lease.h for why. */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "lease.h"
#include "log.h"

enum lease_state {
	LEASE_HELD,    /* splice away */
	LEASE_BROKEN,  /* someone waits: copy, let go once nothing is in
	                  transit */
	LEASE_REFUSED, /* none to be had: copy */
	LEASE_RETIRED  /* its handle was closed: let go, then close */
};

struct lease {
	int fd;
	enum lease_state state;
	dev_t dev;
	ino_t ino;
	uint64_t size; /* while HELD: nobody can change it */
};

static struct lease *leases;
static unsigned num_leases, cap_leases;
static unsigned num_waiting; /* BROKEN and RETIRED */
static volatile sig_atomic_t break_noted;

static struct lease *find(int fd)
{
	unsigned i;

	for (i = 0; i < num_leases; i++)
		if (leases[i].fd == fd && leases[i].state != LEASE_RETIRED)
			return &leases[i];
	return NULL;
}

static void drop(struct lease *l)
{
	if (l->state == LEASE_BROKEN || l->state == LEASE_RETIRED)
		num_waiting--;
	*l = leases[--num_leases];
}

static struct lease *add(int fd)
{
	struct lease *grown;
	unsigned cap;

	if (num_leases == cap_leases) {
		cap = cap_leases ? 2 * cap_leases : 16;
		if ((grown = realloc(leases, cap * sizeof(*grown))) == NULL)
			return NULL;
		leases = grown;
		cap_leases = cap;
	}
	leases[num_leases].fd = fd;
	return &leases[num_leases++];
}

int lease_for_splice(int fd)
{
	struct lease *l = find(fd);
	struct stat st;

	if (l != NULL)
		return l->state == LEASE_HELD;
	if (fstat(fd, &st) == -1 || (l = add(fd)) == NULL)
		return 0;
	l->dev = st.st_dev;
	l->ino = st.st_ino;
	/* The size once the lease is held: a writer that came and went
	 * before it could have changed the size fstat saw. */
	if (fcntl(fd, F_SETLEASE, F_RDLCK) == 0) {
		if (fstat(fd, &st) == 0) {
			l->size = (uint64_t)st.st_size;
			l->state = LEASE_HELD;
			return 1;
		}
		(void)fcntl(fd, F_SETLEASE, F_UNLCK);
	}
	debug3("no read lease on fd %d (%s): READs copy", fd, strerror(errno));
	l->state = LEASE_REFUSED;
	return 0;
}

int lease_held_size(int fd, uint64_t *size)
{
	struct lease *l = find(fd);

	if (l == NULL || l->state != LEASE_HELD)
		return 0;
	*size = l->size;
	return 1;
}

int lease_close(int fd)
{
	struct lease *l = find(fd);

	if (l != NULL && (l->state == LEASE_HELD || l->state == LEASE_BROKEN)) {
		if (l->state == LEASE_HELD)
			num_waiting++;
		l->state = LEASE_RETIRED;
		return 0;
	}
	if (l != NULL)
		drop(l);
	return close(fd);
}

void lease_note_break(void)
{
	break_noted = 1;
}

int lease_pending(void)
{
	return break_noted || num_waiting > 0;
}

void lease_poll(int (*busy)(dev_t dev, ino_t ino))
{
	struct lease *l;
	unsigned i = 0;

	if (break_noted) {
		break_noted = 0;
		for (i = 0; i < num_leases; i++) {
			l = &leases[i];
			if (l->state == LEASE_HELD &&
			    fcntl(l->fd, F_GETLEASE) != F_RDLCK) {
				debug("read lease on fd %d broken: READs "
				      "copy",
				      l->fd);
				l->state = LEASE_BROKEN;
				num_waiting++;
			}
		}
	}
	for (i = 0; i < num_leases && num_waiting > 0;) {
		l = &leases[i];
		if ((l->state != LEASE_BROKEN && l->state != LEASE_RETIRED) ||
		    busy(l->dev, l->ino)) {
			i++;
			continue;
		}
		(void)fcntl(l->fd, F_SETLEASE, F_UNLCK);
		if (l->state == LEASE_RETIRED) {
			(void)close(l->fd);
			drop(l);
			continue;
		}
		/* Still open: it copies for the rest of its life. */
		l->state = LEASE_REFUSED;
		num_waiting--;
		i++;
	}
}

void lease_release_all(void)
{
	struct lease *l;
	unsigned i = 0;

	while (i < num_leases) {
		l = &leases[i];
		if (l->state == LEASE_REFUSED) {
			i++;
			continue;
		}
		(void)fcntl(l->fd, F_SETLEASE, F_UNLCK);
		if (l->state == LEASE_RETIRED) {
			(void)close(l->fd);
		} else if (l->state == LEASE_BROKEN) {
			/* Someone wanted the file: still no splicing. */
			l->state = LEASE_REFUSED;
			num_waiting--;
			i++;
			continue;
		}
		drop(l);
	}
}
