/* mpi_collective.c - Open MPI timings of the collectives other than allreduce, the peer of
 * `hvd-bench --op allgather|broadcast|alltoall|reducescatter` (mpi_allreduce.c is the
 * allreduce's). float32, timed as mpi_allreduce.c (mpi_timing.h, median of ROUNDS rounds, 5 by
 * default: the compare scripts pass their ROUNDS, as to hvd-bench and torch); bytes
 * mean what they mean in hvd-bench: the gathered output of an allgather, the buffer of a
 * broadcast (from rank 0), the per-rank input of an alltoall (equal splits) and of a
 * reducescatter (MPI_Reduce_scatter_block, sum). "barrier" times MPI_Barrier (bytes ignored).
 *
 * Two ways to hold the output of the ops that return a new tensor in hvd and torch
 * (allgather, alltoall, reducescatter): "fresh" mallocs and frees it every op (what a caller
 * of such an API gets), "reused" writes into one buffer allocated once (MPI's best case).
 * A broadcast is in place either way.
 *
 *   mpicc -O2 -o mpi_collective bench/mpi_collective.c
 *   mpirun -np 2 ./mpi_collective allgather|broadcast|alltoall|reducescatter|barrier \
 *       fresh|reused \
 *       [bytes,bytes,...] [rounds]
 *
 * Prints "RESULT <op> <mode> <bytes> <median_us>" lines.
 */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mpi_timing.h"

enum op { ALLGATHER, BROADCAST, ALLTOALL, REDUCESCATTER, BARRIER };

struct op_arg {
  enum op op;
  float *in;
  long in_count;  /* floats in the input */
  long out_count; /* floats in the output (0: in place) */
  float *reused;  /* NULL: a fresh output every op */
  int size;
};

static void run(void *p) {
  const struct op_arg *a = p;
  if (a->op == BARRIER) {
    MPI_Barrier(MPI_COMM_WORLD);
    return;
  }
  if (a->op == BROADCAST) {
    MPI_Bcast(a->in, (int)a->in_count, MPI_FLOAT, 0, MPI_COMM_WORLD);
    return;
  }
  float *out = a->reused != NULL ? a->reused : malloc((size_t)a->out_count * sizeof(float));
  if (a->op == ALLGATHER) {
    MPI_Allgather(a->in, (int)a->in_count, MPI_FLOAT, out, (int)a->in_count, MPI_FLOAT,
                  MPI_COMM_WORLD);
  } else if (a->op == ALLTOALL) {
    const int per = (int)(a->in_count / a->size);
    MPI_Alltoall(a->in, per, MPI_FLOAT, out, per, MPI_FLOAT, MPI_COMM_WORLD);
  } else {
    MPI_Reduce_scatter_block(a->in, out, (int)a->out_count, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
  }
  if (a->reused == NULL) free(out);
}

static int parse_op(const char *s, enum op *out) {
  static const char *names[] = {"allgather", "broadcast", "alltoall", "reducescatter", "barrier"};
  for (int i = 0; i < 5; ++i) {
    if (strcmp(s, names[i]) == 0) {
      *out = (enum op)i;
      return 1;
    }
  }
  return 0;
}

int main(int argc, char **argv) {
  MPI_Init(&argc, &argv);
  int rank = 0, size = 1;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  enum op op = ALLGATHER;
  const int rounds = argc > 4 ? atoi(argv[4]) : 5;
  if (argc < 3 || !parse_op(argv[1], &op) ||
      (strcmp(argv[2], "fresh") != 0 && strcmp(argv[2], "reused") != 0) || rounds < 1) {
    if (rank == 0) {
      fprintf(stderr,
              "usage: mpi_collective allgather|broadcast|alltoall|reducescatter|barrier "
              "fresh|reused [bytes,...] [rounds >= 1]\n");
    }
    MPI_Finalize();
    return 2;
  }
  const int fresh = strcmp(argv[2], "fresh") == 0;
  char list[1024] = "4096,1048576,16777216,67108864";
  if (argc > 3) snprintf(list, sizeof(list), "%s", argv[3]);
  for (char *tok = strtok(list, ","); tok != NULL; tok = strtok(NULL, ",")) {
    const long bytes = atol(tok);
    long in_count = bytes / (long)sizeof(float), out_count = 0;
    if (op == ALLGATHER) {
      in_count = in_count / size < 1 ? 1 : in_count / size;
      out_count = in_count * size;
    } else if (op == ALLTOALL || op == REDUCESCATTER) {
      /* whole rows for every rank, as hvd-bench rounds them */
      const long per = in_count / size < 1 ? 1 : in_count / size;
      in_count = per * size;
      out_count = op == ALLTOALL ? in_count : per;
    } else if (in_count < 1) {
      in_count = 1;
    }
    float *in = malloc((size_t)in_count * sizeof(float));
    for (long i = 0; i < in_count; ++i) in[i] = 1.0f;
    float *reused = NULL;
    if (!fresh && out_count > 0) {
      reused = malloc((size_t)out_count * sizeof(float));
      memset(reused, 0, (size_t)out_count * sizeof(float));
    }
    struct op_arg arg = {op, in, in_count, out_count, reused, size};
    int iters = 0;
    double fastest = 0;
    const double median = timed(run, &arg, rounds, &iters, &fastest);
    if (rank == 0) {
      printf("RESULT %s %s %ld %.1f\n", argv[1], fresh ? "fresh" : "reused", bytes, median * 1e6);
    }
    free(reused);
    free(in);
  }
  MPI_Finalize();
  return 0;
}
