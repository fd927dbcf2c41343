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
trap 'rm -rf "$tmp"' EXIT

ok() { echo "ok - $*"; pass=$((pass + 1)); }
not_ok() { echo "not ok - $*"; fail=$((fail + 1)); }

if ! command -v bpftrace >/dev/null; then
	not_ok "bpftrace is not installed (make deps)"
	echo "1..$((pass + fail))"
	echo "$pass passed, $fail failed"
	exit 1
fi

# The workload, which bpftrace runs as its child (-c) once every probe is
# attached and whose exit ends the trace: bpftrace checks its child after
# each wait for events, whereas a SIGINT that arrives while it is between
# two waits is noticed only with the next event, so it may never end.
#
# A legacy writer that writes in bursts, so that the reader, mapping the
# ring through the shim, runs dry and sleeps between them (the pauses
# shape the load; nothing waits for them), then a writer and a reader of
# records both on the ring.  It leaves "ok" in $tmp/workload.status.
cat >"$tmp/workload" <<EOS
set -o pipefail
for ((i = 0; i < 40; i++)); do
	printf '%01000d' 0
	sleep 0.01
done | "$ringpipe" cat >"$tmp/cat.out" || exit 1
[ "\$(wc -c <"$tmp/cat.out")" = 40000 ] || exit 1
"$ringpipe" "$records" write 20000 16 |
	"$ringpipe" "$records" read 16 >"$tmp/read.out" || exit 1
grep -q '^records: 20000 records' "$tmp/read.out" || exit 1
echo ok >"$tmp/workload.status"
EOS

# trace SCRIPT MAP...: run SCRIPT around the workload; every MAP must be
# printed with at least one histogram bucket or count in it.
trace() {
	local script=$1 name=${1##*/} map rc
	shift
	echo "# ===== $name"
	rm -f "$tmp/workload.status"
	# Attaching takes a while under emulation, but all four scripts
	# together take under five minutes there; 600 s for one is ample.
	# bpftrace runs only ELF files with -c, hence bash.
	timeout -k 10 600 bpftrace -B line -c "/bin/bash $tmp/workload" "$script" \
		>"$tmp/$name.out" 2>&1
	rc=$?
	[ $rc = 0 ] || not_ok "$name: bpftrace exited $rc"
	[ -s "$tmp/workload.status" ] ||
		not_ok "$name: the workload failed or lost records"
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

echo "1..$((pass + fail))"
echo "$pass passed, $fail failed"
[ $fail = 0 ]
