mpirun -np 4 /work/main/build-results/bench/train/gcmpi-train --epochs 10 --seed 1 --json /work/main/results-tmp/adapt/gct-baseline.train.json 
