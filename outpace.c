/* Pacing writes into a pipe stdout; see outpace.h for why. */
#include "config.h"

#include <fcntl.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <time.h>

#include "outpace.h"

int64_t outpace_wait(struct outpace *p, uint64_t written, uint64_t unread,
                     int64_t now_ns)
{
	uint64_t consumed = unread < written ? written - unread : 0,
	         low = p->capacity / 4;
	int64_t gap = now_ns - p->last_ns;
	double sample, wait;

	if (p->capacity == 0)
		return 0;
	if (p->last_ns == 0 || gap <= 0 || gap > OUTPACE_STALE_NS ||
	    consumed < p->last_consumed) {
		p->rate = 0;
	} else {
		sample = (double)(consumed - p->last_consumed) / (double)gap;
		/* Smoothed, so that one burst or pause of the reader does not
		 * set the pace alone. */
		p->rate = p->rate == 0 ? sample : (p->rate + sample) / 2;
	}
	p->last_consumed = consumed;
	p->last_ns = now_ns;
	if (p->rate == 0 || unread <= low)
		return 0;
	wait = (double)(unread - low) / p->rate;
	return wait > OUTPACE_MAX_WAIT_NS ? 0 : (int64_t)wait;
}

static struct outpace stdout_pace;
static uint64_t stdout_written;
static int stdout_fd = -1;

void stdout_pace_init(int fd)
{
	struct stat st;
	int size;

	stdout_fd = fd;
	if (fstat(fd, &st) == 0 && S_ISFIFO(st.st_mode) &&
	    (size = fcntl(fd, F_GETPIPE_SZ)) > 0)
		stdout_pace.capacity = (size_t)size;
}

void stdout_pace_written(size_t n)
{
	stdout_written += n;
}

int64_t stdout_pace_wait(void)
{
	struct timespec now;
	int unread = 0;

	if (stdout_pace.capacity == 0 ||
	    ioctl(stdout_fd, FIONREAD, &unread) == -1 || unread < 0 ||
	    clock_gettime(CLOCK_MONOTONIC, &now) == -1)
		return 0;
	return outpace_wait(&stdout_pace, stdout_written, (uint64_t)unread,
	                    (int64_t)now.tv_sec * 1000000000 + now.tv_nsec);
}
