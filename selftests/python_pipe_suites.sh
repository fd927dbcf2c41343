#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# CPython's own tests of what programs do with pipes, an established suite
# written against plain pipes: fcntl (F_GETPIPE_SZ/F_SETPIPE_SZ), epoll,
# poll and select on pipe ends, os.pipe/pipe2/splice/sendfile and
# non-blocking pipes, posix, the pipes module, and io's tests of writes
# and reads interrupted by signals (SA_RESTART semantics) on pipes.  Under
# fs.pipe-ring-force=1 every pipe they make is a ring, served through the
# ring's legacy paths.  Prints TAP lines and a kselftest-style totals line
# for selftests/run.  Needs Debian's libpython3.11-testsuite (make deps).
set -u
# shellcheck source=selftests/tap.sh
. "$(dirname "$0")/tap.sh"
py=/usr/bin/python3.11
if ! [ -x $py ] || ! [ -f /usr/lib/python3.11/test/test_fcntl.py ]; then
	tap_skip_all "CPython pipe tests" "libpython3.11-testsuite not installed"
fi
mode=buffers
[ "$(cat /proc/sys/fs/pipe-ring-force 2>/dev/null)" = 1 ] && mode=ring
# regrtest ARGS: the arguments are words, the glob is regrtest's.
# shellcheck disable=SC2086 # split on purpose, globbing off
regrtest() { (cd /tmp && set -f && $py -m test --timeout 600 $1); }
succeeded() { grep -q 'Tests\? result: SUCCESS' "$1"; }
# name|regrtest arguments.  test_fcntl_64_bit uses F_NOTIFY (dnotify),
# which the test kernel's configuration leaves out.
for t in "test_fcntl|test_fcntl -i test_fcntl_64_bit" "test_epoll|test_epoll" "test_poll|test_poll" \
	 "test_select|test_select" "test_pipes|test_pipes" "test_posix|test_posix" \
	 "test_os|test_os" "test_io signals|test_io -m *SignalsTest*"; do
	tap_run "CPython ${t%%|*} ($mode)" 40 succeeded regrtest "${t#*|}"
done
tap_end
