#!/bin/sh
# Run by make check only when configure did not find Check: the unit tests
# (tests/check_*) cannot be built, so the run must not look like a pass.
# Exit 99 is a hard error for automake's test driver.
echo "ERROR: the Check unit tests were not built: configure did not find" \
	"Check (apt-get install check, then ./configure again)"
exit 99
