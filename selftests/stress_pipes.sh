#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# stress-ng's pipe-family stressors, each briefly and with --verify: the
# existing body of pipe tests.  Under fs.pipe-ring-force=1 they run
# through the ring's legacy paths.  Prints TAP lines and a kselftest-style
# totals line for selftests/run.
set -u
pass=0 fail=0 skip=0 n=0
echo "TAP version 13"
if ! command -v stress-ng >/dev/null; then
	echo "ok 1 stress-ng # SKIP not installed"
	echo "# Totals: pass:0 fail:0 xfail:0 xpass:0 skip:1 error:0"
	exit 0
fi
mode=buffers
[ "$(cat /proc/sys/fs/pipe-ring-force 2>/dev/null)" = 1 ] && mode=ring
log=$(mktemp)
# pipeherd: many processes on one pipe; poll: poll/ppoll/select on pipe
# ends; sigio: O_ASYNC on a pipe; sigpipe: writes to a pipe without reader.
for stressor in pipe fifo splice tee vm-splice pipeherd poll sigio sigpipe; do
	n=$((n + 1))
	if stress-ng --"$stressor" 2 --verify -t 3 --temp-path /tmp \
		--metrics-brief >"$log" 2>&1 &&
	   ! grep -qiE 'fail|error' "$log"; then
		echo "ok $n stress-ng --$stressor --verify ($mode)"
		pass=$((pass + 1))
	else
		echo "not ok $n stress-ng --$stressor --verify ($mode)"
		sed 's/^/#   /' "$log" | tail -n 20
		fail=$((fail + 1))
	fi
done
rm -f "$log"
echo "# Totals: pass:$pass fail:$fail xfail:0 xpass:0 skip:$skip error:0"
[ $fail = 0 ]
