mpirun -np 4 /work/wt/accuracy/build-results/bench/train/gcmpi-train --epochs 10 --seed 1 --json /work/wt/accuracy/results-tmp/unmodified/um-baseline-s1.train.json 
