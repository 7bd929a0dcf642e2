#!/bin/bash
# deps.sh: install the Debian packages this project needs (only when some are
# missing), then configure and build uring-sftp-server in this directory.
#
#   ./deps.sh                                   # install what is missing, build
#   CONFIGURE_FLAGS=--enable-werror ./deps.sh   # flags passed to ./configure
#
# valgrind, clang and libclang-rt-14-dev are for the tests only: the leak
# checks (tests/leaks.sh) and the libFuzzer target (tests/fuzz.sh); so are
# libfuse3-dev, fuse3 and btrfs-progs (tests/readsafety.sh mounts a FUSE
# passthrough, tests/fusepass, and a btrfs loop device).
#
# Safe to run again: installed packages are not touched, autoreconf runs only
# when configure is missing or stale, and ./configure runs only when the tree
# is not configured yet, or when CONFIGURE_FLAGS is set (even to "") and
# differs from the flags of the last run; then the old build is cleaned first.
# With CONFIGURE_FLAGS unset, an existing configuration is kept.
set -euo pipefail

cd "$(dirname "$(readlink -f "$0")")"

PACKAGES=(
	build-essential autoconf automake libtool pkg-config
	liburing-dev libbsd-dev libssl-dev zlib1g-dev check
	openssh-client openssh-server openssh-sftp-server
	python3 python3-paramiko lftp xfsprogs bc
	mandoc debhelper gnuplot-nox
	valgrind clang libclang-rt-14-dev
	libfuse3-dev fuse3 btrfs-progs
	# tests/uploads.sh: a real client (rclone), the order of fsync and the
	# CLOSE reply (strace)
	rclone strace
	# tests/sshd-test.sh's long listing through every client doc/operations.md
	# names (curl through libssh2, sshfs over FUSE); bench/sshfs-tree.sh
	sshfs curl
	# make bench: the device's limit beside each cold row (fio O_DIRECT)
	fio
)

say() { printf '==> %s\n' "$*"; }

# --- 1. packages ------------------------------------------------------------
missing=()
for pkg in "${PACKAGES[@]}"; do
	status=$(dpkg-query -W -f='${db:Status-Status}' "$pkg" 2>/dev/null || true)
	[ "$status" = installed ] || missing+=("$pkg")
done

if [ ${#missing[@]} -eq 0 ]; then
	say "all ${#PACKAGES[@]} required packages are installed"
else
	say "missing packages: ${missing[*]}"
	if [ "$(id -u)" -ne 0 ]; then
		echo "deps.sh: installing packages needs root; run as root or with sudo:" >&2
		echo "  sudo $0" >&2
		echo "or install them yourself:" >&2
		echo "  sudo apt-get update && sudo apt-get install -y ${missing[*]}" >&2
		exit 1
	fi
	export DEBIAN_FRONTEND=noninteractive
	say "apt-get update"
	apt-get update -q
	say "apt-get install -y ${missing[*]}"
	apt-get install -y -q --no-install-recommends "${missing[@]}" </dev/null
fi

# --- 2. autotools -----------------------------------------------------------
if [ ! -x configure ] || [ ! -f Makefile.in ] ||
	[ configure -ot configure.ac ] || [ Makefile.in -ot Makefile.am ]; then
	say "autoreconf -fi"
	mkdir -p m4
	autoreconf -fi
fi

# --- 3. configure -----------------------------------------------------------
# CONFIGURE_FLAGS is split on white space, like a shell command line.
read -r -a want <<<"${CONFIGURE_FLAGS:-}"

need_configure=yes
if [ -f Makefile ] && [ -x config.status ]; then
	# config.status --config prints the arguments of the last ./configure run,
	# shell-quoted.
	eval "have=($(./config.status --config))"
	# shellcheck disable=SC2154 # "have" is set by the eval above
	if [ -z "${CONFIGURE_FLAGS+set}" ] || [ "${have[*]}" = "${want[*]}" ]; then
		need_configure=no
		[ ${#have[@]} -eq 0 ] || say "keeping the configuration: ./configure ${have[*]}"
	else
		say "configure flags changed (were: '${have[*]}', now: '${want[*]}'): make distclean"
		make distclean >/dev/null || true
	fi
fi

if [ "$need_configure" = yes ]; then
	say "./configure ${want[*]}"
	./configure "${want[@]}"
fi

# --- 4. build ---------------------------------------------------------------
say "make -j$(nproc)"
make -j"$(nproc)"
say "built $(pwd)/uring-sftp-server"
