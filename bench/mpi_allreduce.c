/* mpi_allreduce.c - Open MPI MPI_Allreduce timings, the peer of hvd-bench in
 * compare_allreduce.sh. Same method: float32 SUM in place, 2 warm-up ops, iterations
 * calibrated to ~0.3 s per round, per-round max over ranks, median of the rounds.
 *
 *   mpicc -O2 -o mpi_allreduce bench/mpi_allreduce.c
 *   mpirun -np 2 ./mpi_allreduce [rounds] [bytes,bytes,...]
 *   mpirun -np 2 ./mpi_allreduce [rounds] many KxBYTES
 *
 * Prints a table and "RESULT <bytes> <median_us>" lines ("RESULT many-fused|many-single
 * <K> <median_us>" in the many mode: fused = K tensors packed into one buffer, allreduced
 * once and unpacked, copies included; single = K allreduces one by one).
 */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mpi_timing.h"

struct sweep_arg {
  float *buf;
  int count;
};
static void one_allreduce(void *p) {
  struct sweep_arg *a = p;
  MPI_Allreduce(MPI_IN_PLACE, a->buf, a->count, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
}

struct many_arg {
  float **tensors;
  float *packed;
  int k;
  int count;
};
static void many_single(void *p) {
  struct many_arg *a = p;
  for (int i = 0; i < a->k; i++)
    MPI_Allreduce(MPI_IN_PLACE, a->tensors[i], a->count, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
}
static void many_fused(void *p) {
  struct many_arg *a = p;
  size_t bytes = (size_t)a->count * sizeof(float);
  for (int i = 0; i < a->k; i++) memcpy(a->packed + (size_t)i * a->count, a->tensors[i], bytes);
  MPI_Allreduce(MPI_IN_PLACE, a->packed, a->count * a->k, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
  for (int i = 0; i < a->k; i++) memcpy(a->tensors[i], a->packed + (size_t)i * a->count, bytes);
}

int main(int argc, char **argv) {
  MPI_Init(&argc, &argv);
  int rank, size, iters;
  double mn;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  int rounds = argc > 1 ? atoi(argv[1]) : 5;
  if (argc > 3 && strcmp(argv[2], "many") == 0) {
    struct many_arg a;
    a.k = atoi(argv[3]);
    a.count = atoi(strchr(argv[3], 'x') + 1) / (int)sizeof(float);
    a.tensors = malloc(sizeof(float *) * a.k);
    for (int i = 0; i < a.k; i++) {
      a.tensors[i] = malloc(sizeof(float) * a.count);
      for (int j = 0; j < a.count; j++) a.tensors[i][j] = 1.0f;
    }
    a.packed = malloc(sizeof(float) * a.count * a.k);
    double f = timed(many_fused, &a, rounds, &iters, &mn);
    double s = timed(many_single, &a, rounds, &iters, &mn);
    if (rank == 0) {
      printf("# MPI_Allreduce %d x %d B, np=%d: packed %.1f us, one by one %.1f us\n", a.k,
             a.count * 4, size, f * 1e6, s * 1e6);
      printf("RESULT many-fused %d %.1f\nRESULT many-single %d %.1f\n", a.k, f * 1e6, a.k, s * 1e6);
    }
    MPI_Finalize();
    return 0;
  }
  const char *list = argc > 2 ? argv[2] : "4096,65536,1048576,16777216,67108864";
  char *copy = strdup(list);
  if (rank == 0)
    printf("# MPI_Allreduce float32 sum in place, np=%d, rounds=%d\n%12s %6s %12s %12s %11s\n",
           size, rounds, "bytes", "iters", "time_us", "min_us", "busbw_GB/s");
  for (char *tok = strtok(copy, ","); tok; tok = strtok(NULL, ",")) {
    size_t bytes = strtoull(tok, NULL, 10);
    struct sweep_arg a;
    a.count = (int)(bytes / sizeof(float));
    a.buf = malloc(bytes);
    for (int i = 0; i < a.count; i++) a.buf[i] = 1.0f;
    double med = timed(one_allreduce, &a, rounds, &iters, &mn);
    if (rank == 0) {
      printf("%12zu %6d %12.1f %12.1f %11.3f\n", bytes, iters, med * 1e6, mn * 1e6,
             bytes / med / 1e9 * 2.0 * (size - 1) / size);
      printf("RESULT %zu %.1f\n", bytes, med * 1e6);
      fflush(stdout);
    }
    free(a.buf);
  }
  free(copy);
  MPI_Finalize();
  return 0;
}
