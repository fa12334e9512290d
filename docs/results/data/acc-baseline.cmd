bench/netem 1gbit -- mpirun -np 4 /work/main/build-results/bench/train/gcmpi-train --epochs 10 --seed 1 --json /work/main/results-tmp/results/acc-baseline.train.json 
