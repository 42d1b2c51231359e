/* mpi_check.h - what the MPI peers' result checks share (mpi_allreduce.c, mpi_collective.c):
 * how a value is printed, and the ranks' agreement on a failed check. */
#ifndef HVD_BENCH_MPI_CHECK_H_
#define HVD_BENCH_MPI_CHECK_H_

#include <mpi.h>
#include <stdio.h>

/* v as the checks print it: an integer value as "5.0", anything else (a fraction, nan, inf,
 * huge) as %.9g; as hvd-bench's CheckValueText (check_value.h) prints them. */
static void check_value_text(float v, char *text, size_t size) {
  const int integer = v > -1e15f && v < 1e15f && v == (float)(long long)v;
  snprintf(text, size, integer ? "%.1f" : "%.9g", (double)v);
}

/* Every rank learns whether any rank's check failed (those printed what): then all abort with
 * code 3. */
static void check_agree_or_abort(int bad) {
  int any = 0;
  MPI_Allreduce(&bad, &any, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
  if (any) MPI_Abort(MPI_COMM_WORLD, 3);
}

#endif /* HVD_BENCH_MPI_CHECK_H_ */
