/* Back-end selection and the synchronous helper. */
#include "config.h"

#include <errno.h>
#include <string.h>

#include "backend.h"
#include "log.h"

const struct io_backend *backend = &plain_backend;

int backend_start(enum backend_choice choice, unsigned depth)
{
	int rc;

	if (choice == BACKEND_PLAIN) {
		backend = &plain_backend;
		return backend->init(depth);
	}
	rc = uring_backend.init(depth);
	if (rc == 0) {
		backend = &uring_backend;
		return 0;
	}
	if (choice == BACKEND_URING)
		return rc;
	/* Containers, kernel.io_uring_disabled and small RLIMIT_MEMLOCK all
	 * land here: plain system calls work the same, only slower. */
	verbose("io_uring unavailable (%s); using plain system calls",
	        strerror(-rc));
	backend = &plain_backend;
	return backend->init(depth);
}

ssize_t io_sync(struct io_op *op)
{
	struct io_op *done;
	int rc;

	if ((rc = backend->submit(op)) != 0) {
		op->result = rc;
		return rc;
	}
	backend->flush();
	/* Barrier requests run with nothing else in flight, so the one
	 * completion that arrives is ours. */
	do {
		rc = backend->reap(&done, 1, 1);
	} while (rc == -EINTR);
	if (rc < 0) {
		op->result = rc;
		return rc;
	}
	return op->result;
}
