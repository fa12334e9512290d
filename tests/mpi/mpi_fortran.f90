! mpi_fortran.f90 -- a Fortran program (use mpi, REAL arrays, MPI_REAL).
! MPICH's Fortran bindings call the C MPI_* entry points, so the library
! compresses these sums (the runner checks the statistics); Open MPI 4.1's
! call PMPI_* directly, so there the library stays inert and the sums are
! MPI's own. Either way the sums must be right (int8: within 2 %).
program mpi_fortran
  use mpi
  implicit none
  integer, parameter :: n = 4096
  integer :: ierr, rank, size, i, r
  real :: x(n), y(n)
  double precision :: exact(n), num, den
  call MPI_Init(ierr)
  call MPI_Comm_rank(MPI_COMM_WORLD, rank, ierr)
  call MPI_Comm_size(MPI_COMM_WORLD, size, ierr)
  do i = 1, n
    x(i) = real(mod(i * (rank + 3), 17)) - 8.0
  end do
  exact = 0
  do r = 0, size - 1
    do i = 1, n
      exact(i) = exact(i) + (mod(i * (r + 3), 17) - 8)
    end do
  end do
  call MPI_Allreduce(x, y, n, MPI_REAL, MPI_SUM, MPI_COMM_WORLD, ierr)
  call MPI_Allreduce(MPI_IN_PLACE, x, n, MPI_REAL, MPI_SUM, MPI_COMM_WORLD, ierr)
  num = sum((exact - y)**2) + sum((exact - x)**2)
  den = 2 * sum(exact**2)
  if (sqrt(num / den) > 0.02d0) then
    print *, 'FAIL rank', rank, 'relative error', sqrt(num / den)
    call MPI_Abort(MPI_COMM_WORLD, 1, ierr)
  end if
  if (rank == 0) print '(a)', 'fortran: ok'
  call MPI_Finalize(ierr)
end program mpi_fortran
