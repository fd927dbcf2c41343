# SPDX-License-Identifier: GPL-2.0-only
# Ping-pong round trip per variant, grouped by condition and size.
# gnuplot -e "datadir='...'; outfile='x.png'" latency.gp
load system("dirname " . ARG0) . "/common.gp"
unset logscale x
set xrange [*:*]
set xtics auto
set xlabel ""
variants = system("cat " . datadir . "/lat.list")
set logscale y 10
set format y "%g"
set ylabel "round trip, µs (median, bars: min-max)"
set title "Ping-pong latency, one message each way (QEMU TCG guest)"
set style data histogram
set style histogram errorbars gap 2 lw 1
set style fill solid 0.8 border -1
set boxwidth 0.9
set bmargin 5
set yrange [0.5:*]
plot for [i=1:words(variants)] datadir . "/lat.dat" \
	using (column(3*i-1)):(column(3*i)):(column(3*i+1)):xtic(1) \
	ls style(word(variants, i)) title word(variants, i)
