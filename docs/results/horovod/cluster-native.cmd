/work/main/bench/netem --nodes 2 1gbit -- mpirun -np 4 PYTHON EXAMPLE --epochs 3 --log-interval 50 --data-dir DIR/data
