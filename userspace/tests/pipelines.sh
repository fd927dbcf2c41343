#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# userspace/tests/pipelines.sh: the shim on real programs, on a kernel
# with ring-mode pipes (the VM; selftests/run runs it).
#
#  - test_shim under `ringpipe -f all`: fd reuse, fork, exec, threads,
#    signal handlers (its own TAP output);
#  - real pipelines (coreutils, gzip, tar, make -j4 with its jobserver),
#    each run plainly and with the shim on some or all stages, whose
#    outputs must be byte for byte the same;
#  - a count with strace(1) of the system calls of a writer of small
#    records: the shim must cut its write(2)s by 100 times at least.
#
# Ends with "N passed, N failed".
set -u
here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$here/../.." && pwd)
export RINGPIPE=$repo/userspace/ringpipe
out=$here/out
pass=0 fail=0
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

ok() { echo "ok - $*"; pass=$((pass + 1)); }
not_ok() { echo "not ok - $*"; fail=$((fail + 1)); }

echo "# ===== test_shim under ringpipe -f all"
# Its own TAP goes out as comments, so that this script is one TAP stream.
"$RINGPIPE" -f all "$out/test_shim" >"$tmp/test_shim.out" 2>&1
sed 's/^/# /' "$tmp/test_shim.out"
totals=$(grep -E '^# Totals: ' "$tmp/test_shim.out" | tail -n 1)
if [[ $totals =~ pass:([0-9]+)\ fail:([0-9]+) ]]; then
	pass=$((pass + BASH_REMATCH[1])) fail=$((fail + BASH_REMATCH[2]))
else
	not_ok "test_shim: no totals"
fi

# Inputs: random bytes, and a small tree of files for tar.
head -c 3000000 /dev/urandom >"$tmp/data"
head -c 200000 "$tmp/data" >"$tmp/small"
mkdir -p "$tmp/tree"
cp -r "$repo/selftests" "$repo/userspace/tests" "$tmp/tree/" 2>/dev/null
rm -rf "$tmp/tree/selftests/out" "$tmp/tree/tests/out"

# same NAME PIPELINE: PIPELINE (bash, with $R before the commands that may
# run under the shim) once with R empty and once with R=ringpipe; the
# outputs (and exit status) must be the same.
same() {
	local name=$1 pipeline=$2 plain shim rc1 rc2
	plain=$(R="" timeout 300 bash -o pipefail -c "$pipeline" 2>&1)
	rc1=$?
	shim=$(R="$RINGPIPE" timeout 300 bash -o pipefail -c "$pipeline" 2>&1)
	rc2=$?
	if [ $rc1 = 0 ] && [ $rc2 = 0 ] && [ -n "$plain" ] && [ "$plain" = "$shim" ]; then
		ok "$name"
	else
		not_ok "$name (exit $rc1 plain, $rc2 under the shim)"
		echo "# plain: $plain" | head -n 5
		echo "# shim:  $shim" | head -n 5
	fi
}

export tmp
echo "# ===== pipelines, plain and under the shim"
same "cat | cat | cat, mixed ends" \
	'$R cat "$tmp/data" | $R cat | cat | $R cat | sha256sum'
same "dd with 16-byte blocks on both sides" \
	'$R dd if="$tmp/small" bs=4k status=none | $R dd bs=16 status=none |
	 $R dd bs=64k status=none | sha256sum'
same "head -c and tee" \
	'$R cat "$tmp/data" | $R head -c 1234567 | $R tee "$tmp/tee.${R:+shim}" |
	 sha256sum; sha256sum <"$tmp/tee.${R:+shim}"'
same "gzip | gunzip" \
	'$R cat "$tmp/data" | $R gzip -1 | cat | $R gunzip | $R sha256sum'
same "gzip -c < file | gunzip" \
	'$R gzip -c -1 <"$tmp/data" | $R gunzip -c | sha256sum'
same "tar -c | tar -x" \
	'd="$tmp/untar.${R:+shim}"; mkdir -p "$d" &&
	 $R tar -C "$tmp/tree" -cf - . | $R cat | $R tar -xf - -C "$d" &&
	 cd "$d" && find . -type f | sort | xargs sha256sum'
same "yes | head -c | sha256sum" \
	'{ $R yes "ring buffers for pipes" || true; } | $R head -c 2000000 | sha256sum'
same "a reader that uses stdio (sha256sum) under the shim" \
	'$R cat "$tmp/data" "$tmp/data" | $R sha256sum'

# stdio programs on both ends: the shim gives stdin and stdout streams of
# its own; what a program sees of them must not change.
export out
seq 1 300000 >"$tmp/text"
same "stdio: fileno, interleaving with write(2), fork with unflushed data, buffering modes" \
	'$R "$out/stdio_mix" write | cat'
same "stdio: fgets, getc/ungetc, fread, getline, feof/ferror on stdin" \
	'$R "$out/stdio_mix" write | $R "$out/stdio_mix" read'
same "stdio: a flush to a pipe without reader fails with EPIPE and sets ferror" \
	'$R "$out/stdio_mix" epipe | true'
same "sort | grep | sed | awk | wc, all under the shim" \
	'$R cat "$tmp/text" | $R sort -r | $R grep 7 | $R sed s/1/one/ |
	 $R awk "{ print \$1, length(\$1) }" | $R wc'
same "sort -n | uniq -c | sha256sum, all under the shim" \
	'$R sed "s/.$//" "$tmp/text" | $R sort -n | $R uniq -c | $R sha256sum'
same "python3 reading and writing a pipe under the shim" \
	'$R cat "$tmp/text" | $R python3 -c "import sys; sys.stdout.write(sys.stdin.read().upper())" |
	 $R sha256sum'

# make -j4 with the shim on make and every child (its jobserver pipe too).
mk=$tmp/mk
mkdir -p "$mk/sub"
cat >"$mk/sub/Makefile" <<'EOF'
PARTS := $(addprefix part,$(shell seq 1 12))
all: $(PARTS)
part%:
	@seq 1 $$(($*000)) | cat | sha256sum >$@
EOF
cat >"$mk/Makefile" <<'EOF'
all: sub1 sub2
	@cat sub1/part* sub2/part* | sha256sum
	@grep -c 'anon_inode:\[ringbuffer\]' /proc/$$PPID/maps >ring-areas || true
sub%:
	@mkdir -p $@ && cp sub/Makefile $@/
	+@$(MAKE) -s -C $@
EOF
same "make -j4 through a jobserver (-f all)" \
	'rm -rf "$tmp/mk/sub1" "$tmp/mk/sub2"; RINGPIPE_FDS=all $R make -s -j4 -C "$tmp/mk"'
# The last run was the shim's: make itself had its jobserver on a ring.
if [ "$(cat "$mk/ring-areas" 2>/dev/null || echo 0)" -gt 0 ]; then
	ok "make under the shim maps its jobserver pipe's ring"
else
	not_ok "make under the shim maps its jobserver pipe's ring"
fi

# The system calls of a writer of 16-byte records, traced by strace (not
# strace -c, whose summary leaves out calls it has no name for, as the
# ring's).  The shim is preloaded as ringpipe does it, so that only the
# writer's own calls are traced.
echo "# ===== system calls of a writer of small records"
# calls TRACE REGEX: how many of the traced calls have a name matching REGEX
# (the ring's calls have no name in strace: syscall_0x1cf to 0x1d1).
calls() {
	grep -v 'resumed>' "$1" | sed -E 's/^[0-9]+ +//; s/\(.*//' | grep -cE "^($2)\$"
}
records=10000
strace -f -o "$tmp/plain.trace" "$out/records" write $records 16 |
	"$out/records" read 16 >"$tmp/plain.read"
strace -f -o "$tmp/shim.trace" -E LD_PRELOAD="$repo/userspace/ringpipe-shim.so" \
	"$out/records" write $records 16 | "$RINGPIPE" "$out/records" read 16 >"$tmp/shim.read"
plain_writes=$(calls "$tmp/plain.trace" 'write|writev')
shim_writes=$(calls "$tmp/shim.trace" 'write|writev')
echo "# the writer's write(2)/writev(2) calls: $plain_writes plain, $shim_writes under the shim;" \
	"under the shim also $(calls "$tmp/shim.trace" syscall_0x1cf) ringbuffer()," \
	"$(calls "$tmp/shim.trace" syscall_0x1d0) ringbuffer_wait()," \
	"$(calls "$tmp/shim.trace" syscall_0x1d1) ringbuffer_wakeup() (waking the reader)"
name="the shim cuts a small-record writer's write(2) calls 100 times ($plain_writes -> $shim_writes)"
if grep -q "^records: $records records" "$tmp/plain.read" &&
   grep -q "^records: $records records" "$tmp/shim.read" &&
   [ "$plain_writes" -ge $records ] && [ $((shim_writes * 100)) -le "$plain_writes" ] &&
   [ "$(calls "$tmp/shim.trace" syscall_0x1cf)" -ge 1 ]; then
	ok "$name"
else
	not_ok "$name"
	cat "$tmp/plain.read" "$tmp/shim.read"
fi

# writes_cut NAME MIN CMD...: CMD, a stdio writer, traced plainly and under
# the shim into a reader on the ring: the same output, at least MIN write
# calls plainly and at most a tenth of them under the shim.
writes_cut() {
	local name=$1 min=$2 plain_writes shim_writes
	shift 2
	strace -f -o "$tmp/plain.trace" "$@" | "$RINGPIPE" cat >"$tmp/plain.seq"
	strace -f -o "$tmp/shim.trace" -E LD_PRELOAD="$repo/userspace/ringpipe-shim.so" \
		"$@" | "$RINGPIPE" cat >"$tmp/shim.seq"
	plain_writes=$(calls "$tmp/plain.trace" 'write|writev')
	shim_writes=$(calls "$tmp/shim.trace" 'write|writev')
	name="$name ($plain_writes -> $shim_writes write calls)"
	if cmp -s "$tmp/plain.seq" "$tmp/shim.seq" && [ "$plain_writes" -ge "$min" ] &&
	   [ $((shim_writes * 10)) -le "$plain_writes" ]; then
		ok "$name"
	else
		not_ok "$name"
	fi
}

# A stdio writer (seq prints with stdio): its output goes through the ring.
writes_cut "the shim cuts a stdio writer's write(2) calls 10 times" 100 seq 1 200000

# stdbuf(1) sets a buffering mode before main(); the shim's stream keeps it.
same "stdbuf -oL, -o0 and -o 100 on stdio writers under the shim" \
	'$R stdbuf -oL seq 1 20000 | $R stdbuf -o0 sed s/1/x/ |
	 $R stdbuf -o 100 grep -v 7 | $R stdbuf -oL cut -c1-3 | sha256sum'
# sed -u reads its input a byte at a time and writes each line at once.
same "sed -u (unbuffered input and output) under the shim" \
	'$R seq 1 20000 | $R sed -u s/0/o/ | $R sed -u -n p | sha256sum'
# (Not seq: it hands stdio many lines per fwrite().)
head -n 2000 "$tmp/text" >"$tmp/text2000"
writes_cut "a line-buffered stdio writer (stdbuf -oL) goes through the ring" 2000 \
	stdbuf -oL cut -c1-4 "$tmp/text2000"
# Line buffering kept: sed's first line arrives while sed still waits for
# its second (full buffering would hold it until sed exits).
for R in "" "$RINGPIPE"; do
	rm -f "$tmp/lb.in" "$tmp/lb.ack"
	mkfifo "$tmp/lb.in" "$tmp/lb.ack"
	exec 7<>"$tmp/lb.in"
	{
		$R stdbuf -oL sed -n p <"$tmp/lb.in" |
			{ read -r -t 30 line; echo "${line:-nothing}" >"$tmp/lb.ack"; cat >/dev/null; }
	} 7>&- &
	echo "line one" >&7
	read -r got <"$tmp/lb.ack"
	exec 7>&-
	wait
	name="stdbuf -oL sed hands on each line at once${R:+ under the shim} (got: $got)"
	if [ "$got" = "line one" ]; then ok "$name"; else not_ok "$name"; fi
done

echo "1..$((pass + fail))"
echo "$pass passed, $fail failed"
[ $fail = 0 ]
