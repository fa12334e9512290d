/* cma_read.c — one-off: rank 1 reads rank 0's 64 MiB with
 * process_vm_readv (Linux cross-memory attach, what Open MPI's vader uses
 * for single copies) in blocks of KIB KiB, against a local memcpy.
 *   mpicc -O2 cma_read.c -o cma_read && mpirun -np 2 ./cma_read KIB */
#define _GNU_SOURCE
#include <mpi.h>
#include <stdio.h>
#include <sys/uio.h>
#include <unistd.h>
#include <string.h>
#include <stdlib.h>
int main(int c,char**v){MPI_Init(&c,&v); int r; MPI_Comm_rank(MPI_COMM_WORLD,&r);
 size_t n=64<<20, blk=atoi(v[1])<<10; char*buf=malloc(n); memset(buf,r+1,n); char*dst=malloc(n); memset(dst,0,n);
 long info[2]={getpid(),(long)buf}, peer[2]; MPI_Sendrecv(info,2,MPI_LONG,1-r,0,peer,2,MPI_LONG,1-r,0,MPI_COMM_WORLD,MPI_STATUS_IGNORE);
 for(int it=0;it<4;it++){ MPI_Barrier(MPI_COMM_WORLD); double t=MPI_Wtime(); if(r==1){ for(size_t o=0;o<n;o+=blk){ struct iovec l={dst+o,blk}, rr={(char*)peer[1]+o,blk}; if(process_vm_readv(peer[0],&l,1,&rr,1,0)!=(ssize_t)blk){perror("cma");MPI_Abort(MPI_COMM_WORLD,1);} } t=MPI_Wtime()-t; double t2=MPI_Wtime(); memcpy(dst,buf,n); t2=MPI_Wtime()-t2; printf("blk %zuK cma %.2f GB/s memcpy %.2f GB/s\n",blk>>10,n/t*1e-9,n/t2*1e-9);} MPI_Barrier(MPI_COMM_WORLD);}
 MPI_Finalize();}
