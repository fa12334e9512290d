mpirun -np 4 /work/main/build-results/bench/train/gcmpi-train --epochs 10 --seed 1 --json /work/main/results-tmp/results/inv-lr0.01-baseline.train.json --lr 0.01 
