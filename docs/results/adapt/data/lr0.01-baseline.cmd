mpirun -np 4 /work/main/build-results/bench/train/gcmpi-train --epochs 10 --seed 1 --json /work/main/results-tmp/adapt/lr0.01-baseline.train.json --lr 0.01 
