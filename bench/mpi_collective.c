/* mpi_allgather.c - Open MPI MPI_Allgather timings, the peer of `hvd-bench --op allgather`
 * (bytes = the gathered output, as there), float32, timed as mpi_allreduce.c (mpi_timing.h,
 * median of 5 rounds). Two ways to hold the output: "fresh" mallocs and frees it every op
 * (what a caller of an API returning new tensors gets, as hvd's allgather and torch's do),
 * "reused" gathers into one buffer allocated once (MPI's best case).
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

#include "mpi_timing.h"

struct gather_arg {
  const float *in;
  long count;
  float *reused; /* NULL: a fresh output every op */
  int size;
};
static void gather(void *p) {
  const struct gather_arg *a = p;
  float *out = a->reused != NULL ? a->reused : malloc((size_t)a->count * a->size * sizeof(float));
  MPI_Allgather(a->in, (int)a->count, MPI_FLOAT, out, (int)a->count, MPI_FLOAT, MPI_COMM_WORLD);
  if (a->reused == NULL) free(out);
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
    struct gather_arg arg = {in, count, reused, size};
    int iters = 0;
    double fastest = 0;
    const double median = timed(gather, &arg, 5, &iters, &fastest);
    if (rank == 0) {
      printf("RESULT %s %ld %.1f\n", fresh ? "fresh" : "reused", bytes, median * 1e6);
    }
    free(reused);
    free(in);
  }
  MPI_Finalize();
  return 0;
}
