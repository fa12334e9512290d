bench/netem 100mbit -- mpirun -np 4 /work/main/build-results/bench/train/gcmpi-train --epochs 1 --seed 1 --json /work/main/results-tmp/adapt/var-baseline-short.train.json --subset 6000 
