/* link_pairs.c — one-off: how fast the emulated link between two nodes
 * carries PAIRS simultaneous exchanges of BYTES each way (rank i of the
 * first node with rank i of the second), the slowest pair's time.
 *   mpicc -O2 link_pairs.c -o link_pairs
 *   bench/netem --nodes 2 1gbit -- mpirun -np 8 ./link_pairs BYTES PAIRS */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
int main(int c,char**v){MPI_Init(&c,&v);int r,p;MPI_Comm_rank(MPI_COMM_WORLD,&r);MPI_Comm_size(MPI_COMM_WORLD,&p);
 size_t n=(size_t)atof(v[1]); int pairs=atoi(v[2]); char*a=calloc(n,1),*b=calloc(n,1); int half=p/2, peer=r<half?r+half:r-half; int active=(r%half)<pairs;
 for(int it=0;it<4;it++){MPI_Barrier(MPI_COMM_WORLD);double t=MPI_Wtime(); if(active) MPI_Sendrecv(a,(int)n,MPI_BYTE,peer,0,b,(int)n,MPI_BYTE,peer,0,MPI_COMM_WORLD,MPI_STATUS_IGNORE); t=MPI_Wtime()-t; double m; MPI_Reduce(&t,&m,1,MPI_DOUBLE,MPI_MAX,0,MPI_COMM_WORLD); if(!r) printf("%d pairs x %.1f MiB each way: %.1f ms = %.0f MB/s per direction\n",pairs,n/1048576.0,m*1e3,pairs*n/m*1e-6);}
 MPI_Finalize();}
