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
 *
 * The result check: after each size's timed rounds (outside them: in no printed time), one
 * more op through the same call and output mode on rank-distinctive data with an exact answer
 * (n ranks, rank r; all exact in float32):
 *   allgather      rank r's element i is r*1000 + i % 1000, found at out[r*in_count + i]
 *   broadcast      rank 0 holds 7 + i % 13, the others -1: 7 + i % 13 everywhere after
 *   alltoall       rank r sends rank k in[k*per + j] = r*100 + k + j % 5: rank me expects
 *                  out[k*per + j] = k*100 + me + j % 5
 *   reducescatter  in[i] = r + 1 + i % 7: rank me expects out[j] = n(n+1)/2 + n*((me*per + j) % 7)
 *   barrier        nothing to check
 * A wrong element is printed to stderr ("mpi_collective: CHECK FAILED: ..."), the ranks agree,
 * and the job ends with MPI_Abort code 3 before the size's RESULT line; rank 0 prints
 * "# results checked" at the end.
 */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mpi_check.h"
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

/* The op into `out` (ignored by barrier and broadcast, which is in place). */
static void op_into(const struct op_arg *a, float *out) {
  if (a->op == BARRIER) {
    MPI_Barrier(MPI_COMM_WORLD);
  } else if (a->op == BROADCAST) {
    MPI_Bcast(a->in, (int)a->in_count, MPI_FLOAT, 0, MPI_COMM_WORLD);
  } else if (a->op == ALLGATHER) {
    MPI_Allgather(a->in, (int)a->in_count, MPI_FLOAT, out, (int)a->in_count, MPI_FLOAT,
                  MPI_COMM_WORLD);
  } else if (a->op == ALLTOALL) {
    const int per = (int)(a->in_count / a->size);
    MPI_Alltoall(a->in, per, MPI_FLOAT, out, per, MPI_FLOAT, MPI_COMM_WORLD);
  } else {
    MPI_Reduce_scatter_block(a->in, out, (int)a->out_count, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
  }
}

static void run(void *p) {
  const struct op_arg *a = p;
  if (a->op == BARRIER || a->op == BROADCAST) {
    op_into(a, NULL);
    return;
  }
  float *out = a->reused != NULL ? a->reused : malloc((size_t)a->out_count * sizeof(float));
  op_into(a, out);
  if (a->reused == NULL) free(out);
}

/* ---- the result check (untimed) ---- */

/* What rank `rank` of n puts at input element i for the check of a->op. */
static float check_input(const struct op_arg *a, int rank, long i) {
  const long per = a->in_count / a->size; /* alltoall's piece, reducescatter's block */
  switch (a->op) {
    case ALLGATHER:
      return (float)(rank * 1000L + i % 1000);
    case BROADCAST:
      return rank == 0 ? (float)(7 + i % 13) : -1.0f;
    case ALLTOALL:
      return (float)(rank * 100L + i / per + (i % per) % 5);
    default:
      return (float)(rank + 1 + i % 7); /* REDUCESCATTER */
  }
}

/* What this rank (`me`) must hold at result element j. */
static float check_expected(const struct op_arg *a, int me, long j) {
  const long n = a->size, per = a->in_count / a->size;
  switch (a->op) {
    case ALLGATHER:
      return (float)((j / a->in_count) * 1000 + (j % a->in_count) % 1000);
    case BROADCAST:
      return (float)(7 + j % 13);
    case ALLTOALL:
      return (float)((j / per) * 100 + me + (j % per) % 5);
    default:
      return (float)(n * (n + 1) / 2 + n * ((me * per + j) % 7)); /* REDUCESCATTER */
  }
}

/* One untimed op on check data, through the output mode of the timed ones (the reused buffer,
 * or a fresh one), its result compared element by element; every rank learns whether any
 * rank's check failed (those printed the first wrong element, one line each), and then all
 * abort with code 3. */
static void check(const struct op_arg *a, const char *name, const char *mode, long bytes,
                  int rank) {
  if (a->op == BARRIER) return;
  for (long i = 0; i < a->in_count; ++i) a->in[i] = check_input(a, rank, i);
  float *out = a->in; /* broadcast: in place */
  long count = a->in_count;
  if (a->op != BROADCAST) {
    out = a->reused != NULL ? a->reused : malloc((size_t)a->out_count * sizeof(float));
    count = a->out_count;
    for (long j = 0; j < count; ++j) out[j] = -2.0f; /* no earlier result can pass */
  }
  op_into(a, out);
  int bad = 0;
  for (long j = 0; j < count; ++j) {
    const float want = check_expected(a, rank, j);
    if (out[j] == want) continue;
    char is[48], expected[48];
    check_value_text(out[j], is, sizeof(is));
    check_value_text(want, expected, sizeof(expected));
    fprintf(stderr,
            "mpi_collective: CHECK FAILED: %s %s %ld B rank %d: element %ld is %s, expected %s\n",
            name, mode, bytes, rank, j, is, expected);
    bad = 1;
    break;
  }
  if (out != a->in && out != a->reused) free(out);
  check_agree_or_abort(bad);
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
    check(&arg, argv[1], argv[2], bytes, rank);
    if (rank == 0) {
      printf("RESULT %s %s %ld %.1f\n", argv[1], fresh ? "fresh" : "reused", bytes, median * 1e6);
    }
    free(reused);
    free(in);
  }
  if (rank == 0 && op != BARRIER) printf("# results checked\n");
  MPI_Finalize();
  return 0;
}
