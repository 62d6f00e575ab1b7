set terminal pngcairo size 900,560 font ',10'
set output 'docs/runtimes-metg.png'
set title "Efficiency vs mean task duration (StarPU: lws; Intel(R) Xeon(R) Processor, family 6, model 207, 2 CPUs)" noenhanced
set logscale x
set xlabel 'mean task duration (us, log scale)'
set ylabel 'efficiency (%)'
set yrange [0:*]
set grid
set key top left
set arrow from graph 0, first 50 to graph 1, first 50 nohead dt 2 lc rgb 'gray40'
plot 'docs/runtimes-metg.dat' index 0 using 1:2:3:4 with yerrorlines lw 2 pt 7 dt 2 lc rgb '#9400d3' title 'starpu, 1 worker', 'docs/runtimes-metg.dat' index 1 using 1:2:3:4 with yerrorlines lw 2 pt 7 dt 1 lc rgb '#9400d3' title 'starpu, 2 workers', 'docs/runtimes-metg.dat' index 2 using 1:2:3:4 with yerrorlines lw 2 pt 7 dt 2 lc rgb '#009e73' title 'openmp, 1 worker', 'docs/runtimes-metg.dat' index 3 using 1:2:3:4 with yerrorlines lw 2 pt 7 dt 1 lc rgb '#009e73' title 'openmp, 2 workers', 'docs/runtimes-metg.dat' index 4 using 1:2:3:4 with yerrorlines lw 2 pt 7 dt 1 lc rgb '#56b4e9' title 'sequential, 1 worker'
