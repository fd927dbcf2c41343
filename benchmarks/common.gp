# SPDX-License-Identifier: GPL-2.0-only
# Shared by the plots of benchmarks/run: PNG output, message-size axis.
set terminal pngcairo size 1000,640 font "DejaVu Sans,11" noenhanced
set output outfile
set grid xtics ytics mytics lc rgb "#dddddd"
set key outside right top
set style line 1 lc rgb "#1f77b4" lw 2 pt 7
set style line 2 lc rgb "#ff7f0e" lw 2 pt 5
set style line 3 lc rgb "#2ca02c" lw 2 pt 9
set style line 4 lc rgb "#d62728" lw 2 pt 11
set style line 5 lc rgb "#9467bd" lw 2 pt 13
set style line 6 lc rgb "#8c564b" lw 2 pt 3
set style line 7 lc rgb "#e377c2" lw 2 pt 4
# Line style of a variant, the same in every plot.
style(v) = v eq "rw" ? 1 : v eq "splice" ? 2 : v eq "ring" ? 3 : v eq "zc" ? 4 : \
	   v eq "shim" ? 5 : v eq "spsc" ? 6 : 7
set logscale x 2
set xtics ("16 B" 16, "64 B" 64, "256 B" 256, "1 KiB" 1024, "4 KiB" 4096, \
	   "16 KiB" 16384, "64 KiB" 65536)
set xrange [11:92000]
set xlabel "message size"
