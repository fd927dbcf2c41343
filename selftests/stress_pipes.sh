#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# stress-ng's pipe-family stressors, each briefly and with --verify: the
# existing body of pipe tests.  Under fs.pipe-ring-force=1 they run
# through the ring's legacy paths.  Prints TAP lines and a kselftest-style
# totals line for selftests/run.
set -u
# shellcheck source=selftests/tap.sh
. "$(dirname "$0")/tap.sh"
command -v stress-ng >/dev/null || tap_skip_all stress-ng "not installed"
mode=buffers
[ "$(cat /proc/sys/fs/pipe-ring-force 2>/dev/null)" = 1 ] && mode=ring
# stress-ng reports some failures only in its output.
no_failure() { ! grep -qiE 'fail|error' "$1"; }
# pipeherd: many processes on one pipe; poll: poll/ppoll/select on pipe
# ends; sigio: O_ASYNC on a pipe; sigpipe: writes to a pipe without reader.
for stressor in pipe fifo splice tee vm-splice pipeherd poll sigio sigpipe; do
	tap_run "stress-ng --$stressor --verify ($mode)" 20 no_failure \
		stress-ng --"$stressor" 2 --verify -t 3 --temp-path /tmp --metrics-brief
done
tap_end
