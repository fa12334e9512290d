mpirun -np 2 /work/main/build-results/bench/train/gcmpi-train --epochs 2 --seed 1 --json /work/main/results-tmp/results/speed-np2-shm-baseline-r2.train.json 
