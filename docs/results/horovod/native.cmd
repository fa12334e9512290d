mpirun -np 2 PYTHON EXAMPLE --epochs 3 --log-interval 50 --data-dir DIR/data
