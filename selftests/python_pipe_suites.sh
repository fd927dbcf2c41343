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
py=/usr/bin/python3.11
pass=0 fail=0 skip=0 n=0
echo "TAP version 13"
mode=buffers
[ "$(cat /proc/sys/fs/pipe-ring-force 2>/dev/null)" = 1 ] && mode=ring
if ! [ -x $py ] || ! [ -f /usr/lib/python3.11/test/test_fcntl.py ]; then
	echo "ok 1 CPython pipe tests # SKIP libpython3.11-testsuite not installed"
	echo "# Totals: pass:0 fail:0 xfail:0 xpass:0 skip:1 error:0"
	exit 0
fi
log=$(mktemp)
# name|regrtest arguments.  test_fcntl_64_bit uses F_NOTIFY (dnotify),
# which the test kernel's configuration leaves out.
for t in "test_fcntl|test_fcntl -i test_fcntl_64_bit" "test_epoll|test_epoll" "test_poll|test_poll" \
	 "test_select|test_select" "test_pipes|test_pipes" "test_posix|test_posix" \
	 "test_os|test_os" "test_io signals|test_io -m *SignalsTest*"; do
	n=$((n + 1))
	name=${t%%|*}
	# shellcheck disable=SC2086 # the arguments are words, the glob is regrtest's
	if (cd /tmp && set -f && $py -m test --timeout 600 ${t#*|}) >"$log" 2>&1 &&
	   grep -q 'Tests\? result: SUCCESS' "$log"; then
		echo "ok $n CPython $name ($mode)"
		pass=$((pass + 1))
	else
		echo "not ok $n CPython $name ($mode)"
		sed 's/^/#   /' "$log" | tail -n 40
		fail=$((fail + 1))
	fi
done
rm -f "$log"
echo "# Totals: pass:$pass fail:$fail xfail:0 xpass:0 skip:$skip error:0"
[ $fail = 0 ]
