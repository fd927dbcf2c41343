# SPDX-License-Identifier: GPL-2.0-only
# System calls per MiB against message size (counting pass, pinned).
# gnuplot -e "datadir='...'; outfile='x.png'" syscalls.gp
load system("dirname " . ARG0) . "/common.gp"
variants = system("cat " . datadir . "/counts.list")
set logscale y 10
set format y "%g"
set yrange [0.005:*]
set ylabel "system calls per MiB, both processes (0 drawn at 0.01)"
set title "System calls per MiB moved, pinned (bpftrace, single-threaded TCG)"
plot for [v in variants] sprintf("%s/sys-%s.dat", datadir, v) \
	using 1:2 with linespoints ls style(v) title v
