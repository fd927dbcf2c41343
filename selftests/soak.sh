#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# selftests/soak.sh [SECONDS]
#
# The reliability soak (not part of make check): for SECONDS (default 600)
# with every pipe in ring mode (fs.pipe-ring-force=1), at the same time
#   - stress-ng's pipe, fifo, splice, tee and vm-splice stressors with
#     --verify, one instance each, for the whole time;
#   - pipelines of unmodified programs under the ringpipe shim and plain
#     (cat, dd, gzip, sha256sum), each checked against the input's sha256;
#   - rounds of the reliability selftests with a new seed each round
#     (RB_SEED): the kill loop and the kill points (ringbuffer_death, at
#     twice the make check counts), hostile stores (ringbuffer_hostile),
#     the fuzzer, privilege separation, and every third round fault
#     injection.
# Then a kmemleak scan and the kernel log through ci/splat-check.
#
# Prints what each part did and a last line
#   soak: N s, R rounds, B bytes moved, E errors, S splats
# and exits 0 only if errors and splats are both 0.  Run it on the debug
# kernel in the VM, e.g.
#   ci/vm-run --debug --timeout 900 -- selftests/soak.sh 600
set -u
here=$(cd "$(dirname "$0")" && pwd)
repo=$(dirname "$here")
duration=${1:-600}
case $duration in ''|*[!0-9]*) echo "soak: bad duration: $duration" >&2; exit 2 ;; esac
out=$here/out/kselftest/ringbuffer
work=$(mktemp -d /tmp/soak.XXXXXX)
force_was=$(cat /proc/sys/fs/pipe-ring-force 2>/dev/null || echo 0)
start=$(date +%s)
deadline=$((start + duration))
errors=0

cleanup() {
	[ -n "${stress_pid:-}" ] && kill "$stress_pid" 2>/dev/null
	[ -n "${pipes_pid:-}" ] && kill "$pipes_pid" 2>/dev/null
	echo "$force_was" >/proc/sys/fs/pipe-ring-force 2>/dev/null
	rm -rf "$work"
}
trap cleanup EXIT

for bin in ringbuffer_death ringbuffer_hostile ringbuffer_fuzz ringbuffer_privsep \
	   ringbuffer_faults; do
	[ -x "$out/$bin" ] || { echo "soak: $out/$bin missing (make selftests)"; exit 2; }
done
[ -w /proc/sys/fs/pipe-ring-force ] || { echo "soak: no fs.pipe-ring-force: not the ring kernel?"; exit 2; }
echo 1 >/proc/sys/fs/pipe-ring-force
kmemleak=/sys/kernel/debug/kmemleak
[ -w $kmemleak ] && echo clear >$kmemleak
dmesg -c >/dev/null 2>&1
echo "soak: $duration s, forced ring mode, started $(date -u +%FT%TZ)"

# stress-ng, for the whole soak.
if command -v stress-ng >/dev/null; then
	stress-ng --pipe 1 --fifo 1 --splice 1 --tee 1 --vm-splice 1 --verify \
		--pipe-data-size 4096 -t "$duration" --temp-path "$work" \
		--metrics-brief >"$work/stress.log" 2>&1 &
	stress_pid=$!
else
	echo "soak: stress-ng missing"
	errors=$((errors + 1))
fi

# Pipelines until the deadline; each line of pipes.log: bytes ok|bad what.
head -c $((4 << 20)) /dev/urandom >"$work/in"
want=$(sha256sum <"$work/in" | cut -d' ' -f1)
ringpipe=$repo/userspace/ringpipe
(
	n=0
	while [ "$(date +%s)" -lt "$deadline" ]; do
		n=$((n + 1))
		case $((n % 4)) in
		0) what="ringpipe cat | ringpipe dd bs=7 | sha256sum"
		   got=$("$ringpipe" cat <"$work/in" | "$ringpipe" -f all dd bs=7 status=none |
			 sha256sum | cut -d' ' -f1) ;;
		1) what="cat | gzip | gzip -d | sha256sum (plain, ring legacy paths)"
		   got=$(cat "$work/in" | gzip -1 | gzip -d | sha256sum | cut -d' ' -f1) ;;
		2) what="ringpipe gzip | ringpipe gzip -d | ringpipe sha256sum"
		   got=$("$ringpipe" gzip -1 <"$work/in" | "$ringpipe" gzip -d |
			 "$ringpipe" sha256sum | cut -d' ' -f1) ;;
		*) what="dd bs=4096 | ringpipe cat | dd bs=100 | sha256sum"
		   got=$(dd if="$work/in" bs=4096 status=none | "$ringpipe" cat |
			 dd bs=100 status=none | sha256sum | cut -d' ' -f1) ;;
		esac
		if [ "$got" = "$want" ]; then
			echo "$((4 << 20)) ok $what"
		else
			echo "$((4 << 20)) bad $what"
		fi
	done >"$work/pipes.log"
) &
pipes_pid=$!

# Rounds of the selftests until the deadline, each with its own seed.
round=0 test_bytes=0 test_runs=0 test_failures=0
run_test() {
	local name=$1; shift
	local log=$work/round-$round-$name.log
	test_runs=$((test_runs + 1))
	if ! RB_SOAK=1 RB_SEED=$round "$@" >"$log" 2>&1; then
		test_failures=$((test_failures + 1))
		echo "soak: round $round: $name FAILED (seed $round)"
		grep -E '^not ok|^# .*:[0-9]+:' "$log" | head -n 20 | sed 's/^/soak:   /'
		cp "$log" "$here/out/soak-failure-round-$round-$name.log" 2>/dev/null
	fi
	# Bytes the tests report moving through rings.
	local b
	for b in $(sed -nE 's/.*\(([0-9]+) bytes\) seen.*/\1/p; s/.*records, ([0-9]+) bytes$/\1/p' "$log"); do
		test_bytes=$((test_bytes + b))
	done
	for b in $(sed -nE 's/.* ([0-9]+) clean pipes carried ([0-9]+) bytes each.*/\1 \2/p' "$log" |
		   awk '{ print $1 * $2 }'); do
		test_bytes=$((test_bytes + b))
	done
}
while [ "$(date +%s)" -lt "$deadline" ]; do
	round=$((round + 1))
	RB_SCALE=2 run_test death "$out/ringbuffer_death"
	[ "$(date +%s)" -lt "$deadline" ] || break
	run_test hostile "$out/ringbuffer_hostile" -t scribble_while_peers_work \
		-t lock_of_a_live_foreign_task -t stale_locks_are_reclaimed
	[ "$(date +%s)" -lt "$deadline" ] || break
	run_test fuzz "$out/ringbuffer_fuzz" -t as_root
	run_test privsep "$out/ringbuffer_privsep"
	if [ $((round % 3)) = 0 ] && [ "$(date +%s)" -lt "$deadline" ]; then
		run_test faults "$out/ringbuffer_faults"
	fi
	echo "soak: round $round done at $(($(date +%s) - start)) s," \
		"$test_failures failures in $test_runs test runs so far"
done
errors=$((errors + test_failures))

# The pipelines stop at the deadline; stress-ng at its -t.
wait "$pipes_pid" 2>/dev/null
pipes_pid=
pipe_runs=$(wc -l <"$work/pipes.log")
pipe_bad=$(grep -c ' bad ' "$work/pipes.log")
pipe_bytes=$(awk '{ s += $1 } END { print s + 0 }' "$work/pipes.log")
errors=$((errors + pipe_bad))
echo "soak: $pipe_runs pipelines, $pipe_bytes bytes, $pipe_bad with a wrong sha256"
grep ' bad ' "$work/pipes.log" | sort | uniq -c | sed 's/^/soak:   /'

stress_bytes=0
if [ -n "${stress_pid:-}" ]; then
	wait "$stress_pid"
	rc=$?
	stress_pid=
	if [ $rc != 0 ] || grep -qiE 'fail|error' "$work/stress.log"; then
		echo "soak: stress-ng FAILED (exit $rc)"
		sed 's/^/soak:   /' "$work/stress.log" | tail -n 20
		errors=$((errors + 1))
	fi
	grep -E 'metrc: \[[0-9]+\] (pipe|fifo|splice|tee|vm-splice) +[0-9]+ +[0-9.]+ +[0-9.]+ ' \
		"$work/stress.log" |
		awk '{ printf "soak: stress-ng %s: %s bogo ops in %s s\n", $4, $5, $6 }'
	# The pipe stressor reports its write rate; the others move /dev/zero.
	stress_bytes=$(awk '/metrc: .* pipe .*MB per sec/ { printf "%d", $5 * 1000000 * '"$duration"' }' \
		"$work/stress.log")
	stress_bytes=${stress_bytes:-0}
	echo "soak: stress-ng pipe stressor: about $stress_bytes bytes written"
fi

if [ -w $kmemleak ]; then
	sleep 6	# kmemleak reports only objects older than five seconds
	echo scan >$kmemleak
	leaks=$(cat $kmemleak)
	if [ -n "$leaks" ]; then
		echo "soak: kmemleak reports leaks:"
		echo "$leaks" | head -n 40 | sed 's/^/soak:   /'
		errors=$((errors + 1))
	else
		echo "soak: kmemleak: no leaks"
	fi
fi
dmesg >"$work/dmesg"
if "$repo/ci/splat-check" "$work/dmesg" >"$work/splats"; then
	splats=0
else
	splats=$(grep -cE -- '-\[ cut here \]-|BUG:|WARNING:|UBSAN:|Oops|Kernel panic|general protection fault|detected stalls?|blocked for more than|suspected memory leak|DEBUG_LOCKS_WARN_ON|list_(add|del) corruption' "$work/dmesg")
	[ "$splats" -gt 0 ] || splats=1
	sed 's/^/soak:   /' "$work/splats" | head -n 40
fi

total=$((test_bytes + pipe_bytes + stress_bytes))
echo "soak: selftests: $round rounds, $test_runs runs, $test_failures failed, $test_bytes bytes through rings"
echo "soak: $(($(date +%s) - start)) s, $round rounds, $total bytes moved, $errors errors, $splats splats"
[ "$errors" = 0 ] && [ "$splats" = 0 ]
