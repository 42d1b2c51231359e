/* Proves hvd/c_api.h is plain C (compiled as C11) and that a single-rank libhvd works
 * through it: init, allreduce, allgather, broadcast, alltoall, reducescatter, barrier, join,
 * handles and outputs. Exit code 0 = pass. */
#include <hvd/c_api.h>
#include <stdio.h>
#include <string.h>

static int failures = 0;

#define EXPECT(cond)                                                                      \
  do {                                                                                    \
    if (!(cond)) {                                                                        \
      fprintf(stderr, "%s:%d: expected %s (last error: %s)\n", __FILE__, __LINE__, #cond, \
              hvd_last_error());                                                          \
      ++failures;                                                                         \
    }                                                                                     \
  } while (0)

static hvd_tensor_t Vector(float* data, int64_t n) {
  hvd_tensor_t t;
  memset(&t, 0, sizeof(t));
  t.data = data;
  t.dtype = HVD_FLOAT32;
  t.ndim = 1;
  t.shape[0] = n;
  t.device = HVD_DEVICE_CPU;
  return t;
}

/* Host outputs (CPU inputs); given back by hvd_free, or by hvd_free_on_stream when
 * `on_stream` (for host memory the same). */
static void CheckGathered(hvd_handle_t h, const float* expect, int64_t n, int on_stream) {
  int32_t count = 0;
  hvd_tensor_t out;
  EXPECT(hvd_wait(h, 10.0) == HVD_OK);
  EXPECT(hvd_num_outputs(h, &count) == HVD_OK && count == 1);
  EXPECT(hvd_output(h, 0, &out) == HVD_OK);
  EXPECT(out.ndim == 1 && out.shape[0] == n && out.dtype == HVD_FLOAT32);
  EXPECT(out.device == HVD_DEVICE_CPU);
  EXPECT(out.data != NULL && memcmp(out.data, expect, (size_t)n * sizeof(float)) == 0);
  if (on_stream) {
    hvd_free_on_stream(out.data, NULL);
  } else {
    hvd_free(out.data);
  }
  EXPECT(hvd_release(h) == HVD_OK);
}

int main(void) {
  float in[4] = {1, 2, 3, 4}, out[4] = {0};
  hvd_tensor_t tin = Vector(in, 4), tout = Vector(out, 4);
  hvd_op_options_t opts;
  hvd_handle_t h = 0;
  int32_t size = 0, v = 0, initialized = 1;

  EXPECT(hvd_launch_topology(&v, &size) == HVD_OK && v == 0 && size == 1);
  EXPECT(hvd_launch_topology(NULL, NULL) == HVD_OK);
  EXPECT(hvd_size(&size) == HVD_NOT_INITIALIZED);
  EXPECT(strstr(hvd_last_error(), "has not been initialized") != NULL);
  EXPECT(hvd_init() == HVD_OK);
  EXPECT(hvd_size(&size) == HVD_OK && size == 1);
  EXPECT(hvd_rank(&v) == HVD_OK && v == 0);

  hvd_op_options_init(&opts);
  opts.name = "c.allreduce";
  opts.reduce_op = HVD_OP_AVERAGE;
  opts.postscale_factor = 2.0;
  opts.wait_now = 1; /* waited for at once below */
  EXPECT(hvd_allreduce(&tin, &tout, &opts, &h) == HVD_OK);
  EXPECT(hvd_wait(h, 10.0) == HVD_OK);
  EXPECT(out[0] == 2 && out[3] == 8);
  EXPECT(hvd_release(h) == HVD_OK);

  hvd_op_options_init(&opts);
  EXPECT(hvd_allgather(&tin, &opts, &h) == HVD_OK);
  CheckGathered(h, in, 4, 0);
  EXPECT(hvd_alltoall(&tin, &opts, &h) == HVD_OK);
  CheckGathered(h, in, 4, 1);
  EXPECT(hvd_reducescatter(&tin, &opts, &h) == HVD_OK);
  CheckGathered(h, in, 4, 0);

  memset(out, 0, sizeof(out));
  EXPECT(hvd_broadcast(&tin, &tout, &opts, &h) == HVD_OK);
  EXPECT(hvd_wait(h, 10.0) == HVD_OK && out[2] == 3);
  EXPECT(hvd_release(h) == HVD_OK);

  EXPECT(hvd_barrier(0, &h) == HVD_OK);
  EXPECT(hvd_wait(h, 10.0) == HVD_OK);
  EXPECT(hvd_release(h) == HVD_OK);
  EXPECT(hvd_join(HVD_DEVICE_CPU, &h) == HVD_OK);
  EXPECT(hvd_wait(h, 10.0) == HVD_OK);
  EXPECT(hvd_join_result(h, &v) == HVD_OK && v == 0);
  EXPECT(hvd_release(h) == HVD_OK);

  /* List queries: (NULL, 0) asks for the count; a short buffer is an error naming it. */
  {
    int32_t ids[2] = {-1, -1}, ranks[1] = {-1}, count = -1;
    EXPECT(hvd_process_set_ids(NULL, 0, &count) == HVD_OK && count == 1);
    EXPECT(hvd_process_set_ids(ids, 2, &count) == HVD_OK && count == 1 && ids[0] == 0);
    EXPECT(hvd_process_set_ranks(0, NULL, 0, &count) == HVD_OK && count == 1);
    EXPECT(hvd_process_set_ranks(0, ranks, 1, &count) == HVD_OK && ranks[0] == 0);
    EXPECT(hvd_process_set_ranks(0, NULL, 1, &count) == HVD_INVALID_ARGUMENT);
    EXPECT(strstr(hvd_last_error(), "ranks must not be NULL") != NULL);
    EXPECT(hvd_process_set_ids(ids, 0, &count) == HVD_INVALID_ARGUMENT);
    EXPECT(strstr(hvd_last_error(), "ids capacity 0 is less than 1") != NULL);
  }

  EXPECT(hvd_shutdown() == HVD_OK);
  EXPECT(hvd_is_initialized(&initialized) == HVD_OK && initialized == 0);
  EXPECT(hvd_init() == HVD_OK); /* re-init after shutdown */
  EXPECT(hvd_shutdown() == HVD_OK);
  if (failures == 0) printf("c_api_header_test: OK\n");
  return failures == 0 ? 0 : 1;
}
