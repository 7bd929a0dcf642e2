/* check-file-name, check-file-handle (draft-ietf-secsh-filexfer-
 * extensions-00, "Checking File Contents") and paramiko's check-file: the
 * hash of a byte range of a file, or one hash per block of it, computed in
 * steps through the I/O back end. */
#ifndef CHECKSUM_H
#define CHECKSUM_H

#include "request.h"

int process_extended_check_file_name(struct request *req);
int process_extended_check_file_handle(struct request *req);
int process_extended_check_file(struct request *req);

#endif
