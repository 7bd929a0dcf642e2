/* Kernel read-ahead hints for sequential READ streams on a handle. */
#ifndef READAHEAD_H
#define READAHEAD_H

#include <stdint.h>

struct handle;

void readahead_on_open(struct handle *h);
void readahead_on_read(struct handle *h, uint64_t off, uint32_t len);

#endif
