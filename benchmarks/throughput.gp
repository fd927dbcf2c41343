# SPDX-License-Identifier: GPL-2.0-only
# Throughput against message size, one line per variant, min-max bars.
# gnuplot -e "datadir='...'; cond='pinned'; outfile='x.png'" throughput.gp
load system("dirname " . ARG0) . "/common.gp"
variants = system("cat " . datadir . "/tput-" . cond . ".list")
set logscale y 10
set format y "%g"
set ylabel "MiB/s (median of runs, bars: min-max)"
set title "Pipe throughput by message size, " . cond . \
	" (QEMU TCG guest: ratios matter, not absolute values)"
plot for [v in variants] sprintf("%s/tput-%s-%s.dat", datadir, cond, v) \
	using 1:2:3:4 with yerrorlines ls style(v) title v
