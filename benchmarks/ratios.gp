# SPDX-License-Identifier: GPL-2.0-only
# The targets' ratios against message size: the ring against the SPSC ring
# and against read/write, in the guest (pinned) and on the host.
# gnuplot -e "datadir='...'; outfile='x.png'" ratios.gp
load system("dirname " . ARG0) . "/common.gp"
stems = system("cat " . datadir . "/ratios.list")
titles = system("cat " . datadir . "/ratios.titles")
# Guest lines solid, host lines dashed.
colour(t) = strstrt(t, "spsc") ? (strstrt(t, "kept") ? "#2ca02c" : "#1f77b4") : \
	    strstrt(t, "zc") ? "#d62728" : strstrt(t, "kept") ? "#9467bd" : "#ff7f0e"
dash(t) = strstrt(t, "host:") ? 2 : 1
set logscale y 10
set format y "%g"
set yrange [0.05:300]
set ylabel "ratio (median of the rounds' ratios, bars: min-max)"
set key below maxrows 3
set title "Ring against SPSC ring and against read/write" . \
	  " (guest: QEMU TCG, pinned; host: real CPUs)"
plot 0.8 with lines lc rgb "#888888" dt 3 lw 1.5 title "0.8 (target against SPSC)", \
     20 with lines lc rgb "#bbbbbb" dt 3 lw 1.5 title "20 (host target against read/write)", \
     for [i = 1:words(stems)] sprintf("%s/ratio-%s.dat", datadir, word(stems, i)) \
	using 1:2:3:4 with yerrorlines lc rgb colour(word(titles, i)) \
	dt dash(word(titles, i)) lw 2 pt 7 title word(titles, i)
