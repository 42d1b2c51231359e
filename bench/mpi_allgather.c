/* mpi_allgather.c - Open MPI MPI_Allgather timings, the peer of `hvd-bench --op allgather`
 * (bytes = the gathered output, as there). Same method as mpi_allreduce.c: float32, 2 warm-up
 * ops, iterations calibrated to ~0.3 s per round, per-round max over ranks, median of 5
 * rounds. Two ways to hold the output: "fresh" mallocs and frees it every op (what a caller of
 * an API returning new tensors gets, as hvd's allgather and torch's do), "reused" gathers into
 * one buffer allocated once (MPI's best case).
 *
 *   mpicc -O2 -o mpi_allgather bench/mpi_allgather.c
 *   mpirun -np 2 ./mpi_allgather fresh|reused [bytes,bytes,...]
 *
 * Prints "RESULT <mode> <bytes> <median_us>" lines.
 */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int by_value(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

static double max_over_ranks(double v) {
  double out = 0;
  MPI_Allreduce(&v, &out, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
  return out;
}

static void gather(const float *in, long count, float *reused, int size) {
  float *out = reused != NULL ? reused : malloc((size_t)count * size * sizeof(float));
  MPI_Allgather(in, (int)count, MPI_FLOAT, out, (int)count, MPI_FLOAT, MPI_COMM_WORLD);
  if (reused == NULL) free(out);
}

int main(int argc, char **argv) {
  MPI_Init(&argc, &argv);
  int rank = 0, size = 1;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  const int fresh = argc < 2 || strcmp(argv[1], "reused") != 0;
  char list[1024] = "4096,1048576,16777216,67108864";
  if (argc > 2) snprintf(list, sizeof(list), "%s", argv[2]);
  for (char *tok = strtok(list, ","); tok != NULL; tok = strtok(NULL, ",")) {
    const long bytes = atol(tok);
    long count = bytes / (long)sizeof(float) / size;
    if (count < 1) count = 1;
    float *in = malloc((size_t)count * sizeof(float));
    for (long i = 0; i < count; ++i) in[i] = 1.0f;
    float *reused = NULL;
    if (!fresh) {
      reused = malloc((size_t)count * size * sizeof(float));
      memset(reused, 0, (size_t)count * size * sizeof(float));
    }
    for (int w = 0; w < 2; ++w) gather(in, count, reused, size);
    double t0 = MPI_Wtime();
    for (int w = 0; w < 3; ++w) gather(in, count, reused, size);
    const double estimate = max_over_ranks((MPI_Wtime() - t0) / 3);
    int iters = (int)(0.3 / estimate);
    iters = iters < 3 ? 3 : iters > 2000 ? 2000 : iters;
    double rounds[5];
    for (int r = 0; r < 5; ++r) {
      MPI_Barrier(MPI_COMM_WORLD);
      t0 = MPI_Wtime();
      for (int i = 0; i < iters; ++i) gather(in, count, reused, size);
      rounds[r] = max_over_ranks((MPI_Wtime() - t0) / iters);
    }
    qsort(rounds, 5, sizeof(double), by_value);
    if (rank == 0) {
      printf("RESULT %s %ld %.1f\n", fresh ? "fresh" : "reused", bytes, rounds[2] * 1e6);
    }
    free(reused);
    free(in);
  }
  MPI_Finalize();
  return 0;
}
