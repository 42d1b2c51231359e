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
 *
 * The result check: after each size's timed rounds (outside them: in no printed time), one
 * more op of the same function on rank-distinctive data with an exact answer (element i of
 * rank r is r + 1 + i % 7, the sum n(n+1)/2 + n * (i % 7), exact in float32; in the many mode
 * tensor t is shifted by t, so that swapped tensors show). A wrong element is printed to
 * stderr ("mpi_allreduce: CHECK FAILED: ..."), the ranks agree, and the job ends with
 * MPI_Abort code 3 before the size's RESULT line; rank 0 prints "# results checked" at the end.
 */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mpi_check.h"
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

/* ---- the result check (untimed) ---- */

/* Element i of rank r's check data, and the sum over n ranks (exact in float32 while
 * n(n+1)/2 + 6n < 2^24). */
static float check_input(int rank, long i) { return (float)(rank + 1 + i % 7); }
static float check_sum(int n, long i) { return (float)((long)n * (n + 1) / 2 + (long)n * (i % 7)); }

/* 1 after printing the first element of got[0..count) that is not the sum of the check data
 * (tensor t of the many mode, its data shifted by t; t < 0: the sweep's one buffer), as one
 * line (one write, not interleaved with another rank's). */
static int wrong_sum(const char *what, int rank, int n, int t, const float *got, long count) {
  const int shift = t < 0 ? 0 : t;
  for (long i = 0; i < count; i++) {
    const float want = check_sum(n, i + shift);
    if (got[i] == want) continue;
    char tensor[32] = "", is[48], expected[48];
    if (t >= 0) snprintf(tensor, sizeof(tensor), "tensor %d ", t);
    check_value_text(got[i], is, sizeof(is));
    check_value_text(want, expected, sizeof(expected));
    fprintf(stderr, "mpi_allreduce: CHECK FAILED: %s rank %d: %selement %ld is %s, expected %s\n",
            what, rank, tensor, i, is, expected);
    return 1;
  }
  return 0;
}

/* One untimed `fn` on the many mode's check data; then the tensors are ones again, as the
 * timed rounds had them. */
static void check_many(void (*fn)(void *), struct many_arg *a, const char *mode, int rank, int n) {
  char what[96];
  snprintf(what, sizeof(what), "%s %d x %d B", mode, a->k, a->count * (int)sizeof(float));
  for (int t = 0; t < a->k; t++)
    for (int j = 0; j < a->count; j++) a->tensors[t][j] = check_input(rank, j + t);
  fn(a);
  int bad = 0;
  for (int t = 0; t < a->k && !bad; t++) bad = wrong_sum(what, rank, n, t, a->tensors[t], a->count);
  check_agree_or_abort(bad);
  for (int t = 0; t < a->k; t++)
    for (int j = 0; j < a->count; j++) a->tensors[t][j] = 1.0f;
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
    check_many(many_fused, &a, "many-fused", rank, size);
    double s = timed(many_single, &a, rounds, &iters, &mn);
    check_many(many_single, &a, "many-single", rank, size);
    if (rank == 0) {
      printf("# MPI_Allreduce %d x %d B, np=%d: packed %.1f us, one by one %.1f us\n", a.k,
             a.count * 4, size, f * 1e6, s * 1e6);
      printf("RESULT many-fused %d %.1f\nRESULT many-single %d %.1f\n", a.k, f * 1e6, a.k, s * 1e6);
      printf("# results checked\n");
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
    /* the check: one more allreduce of this buffer, on check data */
    for (int i = 0; i < a.count; i++) a.buf[i] = check_input(rank, i);
    one_allreduce(&a);
    char what[64];
    snprintf(what, sizeof(what), "allreduce %zu B", bytes);
    check_agree_or_abort(wrong_sum(what, rank, size, -1, a.buf, a.count));
    if (rank == 0) {
      printf("%12zu %6d %12.1f %12.1f %11.3f\n", bytes, iters, med * 1e6, mn * 1e6,
             bytes / med / 1e9 * 2.0 * (size - 1) / size);
      printf("RESULT %zu %.1f\n", bytes, med * 1e6);
      fflush(stdout);
    }
    free(a.buf);
  }
  free(copy);
  if (rank == 0) printf("# results checked\n");
  MPI_Finalize();
  return 0;
}
