#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# userspace/demo.sh: what `make demo` runs inside the VM (release kernel).
# The same unmodified programs, once plainly and once under ringpipe(1),
# side by side: throughput (median of five interleaved runs) and the writer's system
# calls as strace(1) counts them.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
ringpipe=$here/ringpipe
records=$here/tests/out/records
runs=5

now() { date +%s.%N; }
median() { sort -g | sed -n "$(( (runs + 1) / 2 ))p"; }

# mibps SECONDS BYTES: three significant digits, so that the ratio of two
# slow pipelines is not the ratio of two rounded figures.
mibps() { awk -v t="$1" -v b="$2" 'BEGIN { printf "%.3g", b / t / 1048576 }'; }

# time_pipeline BYTES CMD: MiB/s of one run of CMD (a bash pipeline).
time_pipeline() {
	local bytes=$1 t0 t1
	t0=$(now)
	# Not pipefail: yes(1) ends by SIGPIPE when head(1) has had enough.
	bash -c "$2" >/dev/null
	t1=$(now)
	mibps "$(awk -v a="$t0" -v b="$t1" 'BEGIN { print b - a }')" "$bytes"
}

compare() {
	local title=$1 bytes=$2 plain=$3 shim=$4 p s i
	echo
	echo "== $title"
	echo "   plain:        $plain"
	echo "   under ring:   $shim"
	# Interleaved, so that the host's load drifts over both alike.
	rm -f /tmp/p.all /tmp/s.all
	for ((i = 0; i < runs; i++)); do
		time_pipeline "$bytes" "$plain" >>/tmp/p.all; echo >>/tmp/p.all
		time_pipeline "$bytes" "$shim" >>/tmp/s.all; echo >>/tmp/s.all
	done
	p=$(median </tmp/p.all) s=$(median </tmp/s.all)
	rm -f /tmp/p.all /tmp/s.all
	printf '   %-14s %10s MiB/s\n' plain "$p" ringpipe "$s"
	awk -v p="$p" -v s="$s" 'BEGIN { printf "   ratio          %10.1fx\n", s / p }'
}

echo "demo: kernel $(uname -r), $(nproc) CPUs (QEMU TCG: absolute figures are"
echo "demo: those of an emulated machine; the ratios are what matters)"
echo "demo: fs.pipe-ring-force=$(cat /proc/sys/fs/pipe-ring-force) (pipes go on the ring only when asked)"

n=1200000
compare "$n records of 16 bytes, one write(2) and one read(2) each" \
	$((n * 16)) \
	"$records write $n 16 | $records read 16" \
	"$ringpipe $records write $n 16 | $ringpipe $records read 16"

# A log filter: grep --line-buffered passes each line on as it comes
# (stdio, one write(2) per line plain).
lines=2000000
grep_bytes=$(seq 1 $lines | wc -c)
compare "seq | grep --line-buffered -v DEBUG | wc -l (stdio on all three)" "$grep_bytes" \
	"seq 1 $lines | grep --line-buffered -v DEBUG | wc -l" \
	"$ringpipe seq 1 $lines | $ringpipe grep --line-buffered -v DEBUG | $ringpipe wc -l"

# stdbuf(1) makes any stdio program line-buffered; the shim keeps the mode.
cut_bytes=$(seq 1 $lines | cut -c1-4 | wc -c)
compare "seq | stdbuf -oL cut -c1-4 | wc -l (stdio, line-buffered by stdbuf)" "$cut_bytes" \
	"seq 1 $lines | stdbuf -oL cut -c1-4 | wc -l" \
	"$ringpipe seq 1 $lines | $ringpipe stdbuf -oL cut -c1-4 | $ringpipe wc -l"

# A live log filter: sed -u reads its input a byte at a time (read(2) of
# one byte, plain) and writes each line as it is done.
sed_lines=100000
sed_bytes=$(seq 1 $sed_lines | wc -c)
compare "seq | sed -u s/0/o/ | wc -l (stdio, unbuffered: tail -f | sed -u)" "$sed_bytes" \
	"seq 1 $sed_lines | sed -u s/0/o/ | wc -l" \
	"$ringpipe seq 1 $sed_lines | $ringpipe sed -u s/0/o/ | $ringpipe wc -l"

echo
echo "== same bytes either way"
same() {
	local a b
	a=$(set +o pipefail; bash -c "$1" | sha256sum)
	b=$(set +o pipefail; bash -c "$2" | sha256sum)
	printf '   %-40s %s\n' "$3" "$([ "$a" = "$b" ] && echo identical || echo DIFFERENT)"
	[ "$a" = "$b" ] || { echo "demo: the outputs differ"; exit 1; }
}
# records checks what it reads (none lost, torn or out of order).
same "$records write 20000 16 | $records read 16 | sed 's/ in .*//'" \
	"$ringpipe $records write 20000 16 | $ringpipe $records read 16 | sed 's/ in .*//'" \
	"records write | records read"
same "yes | head -c 64M" "$ringpipe yes | $ringpipe head -c 64M" "yes | head -c 64M"
same "seq 1 $lines | grep --line-buffered -v DEBUG" \
	"$ringpipe seq 1 $lines | $ringpipe grep --line-buffered -v DEBUG" "seq | grep --line-buffered"
same "seq 1 $lines | stdbuf -oL cut -c1-4" \
	"$ringpipe seq 1 $lines | $ringpipe stdbuf -oL cut -c1-4" "seq | stdbuf -oL cut"
same "seq 1 $sed_lines | sed -u s/0/o/" \
	"$ringpipe seq 1 $sed_lines | $ringpipe sed -u s/0/o/" "seq | sed -u"

echo
echo "== system calls of the writer of 20000 16-byte records (strace)"
strace -f -o /tmp/plain.trace "$records" write 20000 16 | "$records" read 16 >/dev/null
strace -f -o /tmp/shim.trace -E LD_PRELOAD="$here/ringpipe-shim.so" "$records" write 20000 16 |
	"$ringpipe" "$records" read 16 >/dev/null
# calls TRACE REGEX: how many of the traced calls have a name matching REGEX.
calls() {
	grep -v 'resumed>' "$1" | sed -E 's/^[0-9]+ +//; s/\(.*//' | grep -cE "^($2)\$" || true
}
row() {
	printf '   %-34s %8s %8s\n' "$1" "$(calls /tmp/plain.trace "$2")" "$(calls /tmp/shim.trace "$2")"
}
printf '   %-34s %8s %8s\n' "" plain ringpipe
row "write(2)" write
row "ringbuffer(2)" syscall_0x1cf
row "ringbuffer_wakeup(2)" syscall_0x1d1
row "ringbuffer_wait(2)" syscall_0x1d0
row "all, start-up included" '[a-z_0-9]+'
