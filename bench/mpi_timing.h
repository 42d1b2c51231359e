/* mpi_timing.h - the timing method every MPI peer in bench/ shares with hvd-bench: 2 warm-up
 * ops, iterations calibrated to ~0.3 s per round (3..2000), per-round max over ranks, median
 * of the rounds. Included by mpi_allreduce.c and mpi_collective.c (each built alone with mpicc).
 */
#ifndef HVD_BENCH_MPI_TIMING_H_
#define HVD_BENCH_MPI_TIMING_H_

#include <mpi.h>
#include <stdlib.h>

typedef void (*op_fn)(void *);

static int by_value(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

static double max_over_ranks(double v) {
  double out = 0;
  MPI_Allreduce(&v, &out, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
  return out;
}

/* Median per-op time over `rounds`; *min_out gets the fastest round. */
static double timed(op_fn fn, void *arg, int rounds, int *iters_out, double *min_out) {
  for (int w = 0; w < 2; w++) fn(arg);
  double t0 = MPI_Wtime();
  for (int w = 0; w < 3; w++) fn(arg);
  double est = max_over_ranks((MPI_Wtime() - t0) / 3);
  int iters = (int)(0.3 / est);
  iters = iters < 3 ? 3 : iters > 2000 ? 2000 : iters;
  double *rt = malloc(sizeof(double) * rounds);
  for (int r = 0; r < rounds; r++) {
    MPI_Barrier(MPI_COMM_WORLD);
    t0 = MPI_Wtime();
    for (int i = 0; i < iters; i++) fn(arg);
    rt[r] = max_over_ranks((MPI_Wtime() - t0) / iters);
  }
  qsort(rt, rounds, sizeof(double), by_value);
  double med = rt[rounds / 2];
  *min_out = rt[0];
  *iters_out = iters;
  free(rt);
  return med;
}

#endif /* HVD_BENCH_MPI_TIMING_H_ */
