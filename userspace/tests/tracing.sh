#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# userspace/tests/tracing.sh: each bpftrace script of userspace/tracing/
# against a real ring workload, on a kernel with the ringbuffer
# tracepoints (the VM, booted with VM_TCG=single: attaching probes patches
# kernel text, which multi-threaded TCG does not survive here).
#
# The workload (below) makes ring users sleep and wake.  A script passes
# when it printed the maps it exists for, non-empty.  Arguments name the
# scripts to run (default: all).  Ends with "N passed, N failed".
set -u
here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$here/../.." && pwd)
ringpipe=$repo/userspace/ringpipe
records=$here/out/records
pass=0 fail=0
tmp=$(mktemp -d)
bpf=
trap '[ -n "$bpf" ] && kill -9 $bpf 2>/dev/null; rm -rf "$tmp"' EXIT

ok() { echo "ok - $*"; pass=$((pass + 1)); }
not_ok() { echo "not ok - $*"; fail=$((fail + 1)); }

if ! command -v bpftrace >/dev/null; then
	not_ok "bpftrace is not installed (make deps)"
	echo "$pass passed, $fail failed"
	exit 1
fi

# A legacy writer that writes in bursts, so that the reader, mapping the
# ring through the shim, runs dry and sleeps between them (the pauses
# shape the load; nothing waits for them), then a writer and a reader of
# records both on the ring.
workload() {
	local i
	for ((i = 0; i < 40; i++)); do
		printf '%01000d' 0
		sleep 0.01
	done | "$ringpipe" cat >"$tmp/cat.out"
	[ "$(wc -c <"$tmp/cat.out")" = 40000 ] || return 1
	"$ringpipe" "$records" write 20000 16 |
		"$ringpipe" "$records" read 16 >"$tmp/read.out"
	grep -q '^records: 20000 records' "$tmp/read.out"
}

# trace SCRIPT MAP...: run SCRIPT around the workload; every MAP must be
# printed with at least one histogram bucket or count in it.
trace() {
	local script=$1 name=${1##*/} map started=0 i
	shift
	echo "# ===== $name"
	bpftrace "$script" >"$tmp/$name.out" 2>&1 &
	bpf=$!
	# bpftrace says it is tracing once every probe is attached; that
	# takes a while under emulation.
	for ((i = 0; i < 1200; i++)); do
		grep -q 'Hit Ctrl-C' "$tmp/$name.out" && { started=1; break; }
		kill -0 $bpf 2>/dev/null || break
		sleep 0.1
	done
	if [ $started = 0 ]; then
		not_ok "$name: bpftrace did not start"
		sed 's/^/# /' "$tmp/$name.out" | head -n 20
		kill -9 $bpf 2>/dev/null
		wait $bpf 2>/dev/null
		bpf=
		return
	fi
	workload || not_ok "$name: the workload lost records"
	kill -INT $bpf
	if ! timeout 120 tail --pid=$bpf -f /dev/null; then
		kill -9 $bpf
	fi
	wait $bpf
	bpf=
	sed 's/^/# /' "$tmp/$name.out"
	for map in "$@"; do
		# A map prints as "@name[...]: value" or as "@name[...]:" followed
		# by histogram lines "[lo, hi)  count |@@@|".
		if awk -v map="@$map" '
			index($0, map "[") == 1 || index($0, map ":") == 1 { inmap = 1
				if ($NF ~ /^[1-9][0-9]*$/) found = 1; next }
			/^@/ { inmap = 0 }
			inmap && /^\[/ && /\|@+/ { found = 1 }
			END { exit !found }' "$tmp/$name.out"; then
			ok "$name: @$map"
		else
			not_ok "$name: @$map missing or empty"
		fi
	done
}

# The scripts named on the command line (without .bt), or all.
wanted() { [ ${#only[@]} = 0 ] || [[ " ${only[*]} " == *" $1 "* ]]; }
only=("$@")
wanted ringwaitlat && trace "$repo/userspace/tracing/ringwaitlat.bt" wait_usecs
wanted ringwakelat && trace "$repo/userspace/tracing/ringwakelat.bt" wake_to_run_usecs
wanted ringwakebytes && trace "$repo/userspace/tracing/ringwakebytes.bt" bytes
wanted ringusers && trace "$repo/userspace/tracing/ringusers.bt" maps sleeps

echo "$pass passed, $fail failed"
[ $fail = 0 ]
