#!/bin/bash
# READDIR replies within their 64 KiB bound when owners and groups have
# long names (LDAP, Active Directory): tests/longnames.py, once per back
# end, in a mount namespace whose /etc/passwd and /etc/group have one long
# user and group more (nothing outside it sees them).  Needs root.
set -eu
# shellcheck source-path=SCRIPTDIR source=lib.sh
. "$(cd "$(dirname "$0")" && pwd)/lib.sh"

find_server
make_workdir longnames
setup_passes
run_passes longnames.py
finish
