# shellcheck shell=bash
# SPDX-License-Identifier: GPL-2.0
#
# Sourced by the shell tests that wrap an established suite: TAP lines,
# each failure with the tail of its log, and the kselftest-style totals
# line that selftests/run adds up.

tap_pass=0 tap_fail=0 tap_n=0
tap_log=$(mktemp)
echo "TAP version 13"

# tap_skip_all NAME REASON: the whole suite cannot run here.
tap_skip_all() {
	rm -f "$tap_log"
	echo "ok 1 $1 # SKIP $2"
	echo "# Totals: pass:0 fail:0 xfail:0 xpass:0 skip:1 error:0"
	exit 0
}

# tap_run NAME LINES CHECK CMD...: one test point; it passes when CMD
# exits 0 and CHECK LOG does too.  A failure shows LINES lines of the log.
tap_run() {
	local name=$1 lines=$2 check=$3
	shift 3
	tap_n=$((tap_n + 1))
	if "$@" >"$tap_log" 2>&1 && "$check" "$tap_log"; then
		echo "ok $tap_n $name"
		tap_pass=$((tap_pass + 1))
	else
		echo "not ok $tap_n $name"
		sed 's/^/#   /' "$tap_log" | tail -n "$lines"
		tap_fail=$((tap_fail + 1))
	fi
}

# tap_end: the totals line; the exit status says whether all passed.
tap_end() {
	rm -f "$tap_log"
	echo "# Totals: pass:$tap_pass fail:$tap_fail xfail:0 xpass:0 skip:0 error:0"
	[ $tap_fail = 0 ]
}
