mpirun -np 4 /work/main/build-results/bench/train/gcmpi-train --epochs 20 --seed 1 --json /work/main/results-tmp/results/inv-e20-baseline.train.json 
