/* hvd/c_api.h — the only public header of libhvd, the hvd collective runtime.
 *
 * Plain C (a test written in C includes it). Every call returns hvd_status_t; results come
 * back through out-parameters; hvd_last_error() gives the message of the last failing call on
 * the calling thread. All functions are thread-safe unless noted.
 *
 * Lifecycle: hvd_init() reads the worker's configuration from the environment that hvdrun set
 * (HVD_RANK, HVD_SIZE, HVD_RENDEZVOUS_ADDR, ...; see `hvdrun --print-config`) and rendezvouses
 * with the other ranks. Without HVD_RENDEZVOUS_ADDR it runs as a single rank. hvd_shutdown()
 * finishes every pending operation with HVD_ABORTED and may be followed by hvd_init() again.
 * hvd_abort() is distinct: it fails everything in flight immediately and tells the peers.
 *
 * Operations are asynchronous: hvd_allreduce() etc. enqueue the tensor and return a handle at
 * once; the runtime's background thread negotiates with the other ranks, fuses, runs the
 * collective and completes the handle. hvd_poll()/hvd_wait() observe completion; a failure
 * (mismatched shapes across ranks, a dead peer, a timeout) is the handle's status and message.
 * Every handle must be released with hvd_release() after it completed.
 *
 * Memory: input buffers must stay valid and unmodified until the handle completes. Outputs
 * whose size is known up front (allreduce, broadcast) are written into the caller's `output`
 * descriptor (which may alias the input: in place). Outputs whose size depends on the other
 * ranks (allgather, alltoall, reducescatter) are allocated by the runtime (64-byte aligned);
 * hvd_output() hands over ownership of one such buffer, to be given back with hvd_free() (from
 * any thread; the runtime may keep it for a later output of its size, HVD_OUTPUT_CACHE_BYTES).
 *
 * GPU tensors (device >= 0; builds with HVD_BUILT_CUDA): data is memory of that CUDA device
 * (checked at enqueue). The runtime reads inputs after the work queued on options->cuda_stream
 * before the call (an event, no device synchronize); a handle completes once its results are
 * written on the device. Runtime-allocated outputs of GPU ops (allgather, alltoall,
 * reducescatter) are memory of the input's device when the process set runs them on NCCL (each
 * member has a GPU of its own): hvd_output describes them with that device, and they come from
 * a stream-ordered pool (no device synchronize to allocate or free). Where the set stages GPU
 * tensors through the host (ranks sharing a GPU, HVD_GPU_OPERATIONS=cpu, a dtype or reduction
 * NCCL lacks) they are host memory, described with HVD_DEVICE_CPU. hvd_output's `device` says
 * which; the caller never guesses.
 */
#ifndef HVD_C_API_H_
#define HVD_C_API_H_

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#if defined(__GNUC__)
#define HVD_EXPORT __attribute__((visibility("default")))
#else
#define HVD_EXPORT
#endif

/* Values equal hvd::StatusCode (common/status.h). */
typedef enum {
  HVD_OK = 0,
  HVD_INVALID_ARGUMENT = 1,
  HVD_TIMEOUT = 2,
  HVD_REMOTE_ERROR = 3, /* the collective failed because of another rank (mismatch, peer died) */
  HVD_ABORTED = 4,      /* the runtime was shut down or aborted */
  HVD_INTERNAL = 5,
  HVD_NOT_INITIALIZED = 6,
  HVD_IN_PROGRESS = 7, /* hvd_wait timed out before completion; the op goes on */
  HVD_PRECONDITION_FAILED = 8,
  HVD_NOT_FOUND = 9,
  HVD_UNIMPLEMENTED = 10,
  HVD_IO_ERROR = 11,
  HVD_PERMISSION_DENIED = 12
} hvd_status_t;

typedef enum {
  HVD_UINT8 = 0,
  HVD_INT8 = 1,
  HVD_UINT16 = 2,
  HVD_INT16 = 3,
  HVD_INT32 = 4,
  HVD_INT64 = 5,
  HVD_FLOAT16 = 6,
  HVD_FLOAT32 = 7,
  HVD_FLOAT64 = 8,
  HVD_BOOL = 9,
  HVD_BFLOAT16 = 10
} hvd_dtype_t;

/* Numbering as Horovod's horovod_reduce_op_*() so Python constants match. HVD_OP_ADASUM:
 * allreduce only, floating-point tensors (float16, bfloat16, float32, float64; others are
 * HVD_INVALID_ARGUMENT at enqueue); docs/python.md "Adasum". */
typedef enum {
  HVD_OP_AVERAGE = 0,
  HVD_OP_SUM = 1,
  HVD_OP_ADASUM = 2,
  HVD_OP_MIN = 3,
  HVD_OP_MAX = 4,
  HVD_OP_PRODUCT = 5
} hvd_reduce_op_t;

#define HVD_MAX_DIMS 8
#define HVD_DEVICE_CPU (-1)
/* A CUDA device ordinal as a descriptor's device (builds with HVD_BUILT_CUDA). */
#define HVD_DEVICE_CUDA(ordinal) ((int32_t)(ordinal))

/* A tensor descriptor. The data is dense, row-major (contiguous). */
typedef struct {
  void* data;
  hvd_dtype_t dtype;
  int32_t ndim; /* 0 = scalar */
  int64_t shape[HVD_MAX_DIMS];
  int32_t device; /* HVD_DEVICE_CPU, or HVD_DEVICE_CUDA(ordinal) */
} hvd_tensor_t;

typedef int64_t hvd_handle_t;

/* Per-operation options. Call hvd_op_options_init() first; it sets the defaults shown. */
typedef struct {
  const char* name;          /* NULL: a unique name is generated. Must match across ranks. */
  hvd_reduce_op_t reduce_op; /* HVD_OP_SUM; allreduce and reducescatter */
  double prescale_factor;    /* 1.0 */
  double postscale_factor;   /* 1.0 */
  int32_t root_rank;         /* 0; broadcast: global rank of the root */
  int32_t process_set_id;    /* 0 = all ranks */
  const int32_t* splits;     /* NULL; alltoall: rows of dim 0 sent to each member of the set
                                (in order from row 0; rows past their sum are not sent) */
  int32_t num_splits;        /* 0 */
  /* NULL (the legacy default stream); GPU tensors: the cudaStream_t whose work produces the
   * inputs (and may still use the outputs). The runtime waits for an event it records there at
   * enqueue, not for the whole device; the handle completes once the results are on the GPU. */
  void* cuda_stream;
  /* 0; 1: the caller calls hvd_wait on the handle at once (a synchronous collective). The
   * runtime then does not wake its background thread for this op: the waiting caller runs the
   * cycle itself (no thread hand-off). Harmless if the caller does not: the background thread
   * takes the op at its next cycle, or when hvd_wait or another enqueue comes. */
  int32_t wait_now;
} hvd_op_options_t;

HVD_EXPORT void hvd_op_options_init(hvd_op_options_t* options);

/* ---- lifecycle ------------------------------------------------------------------------- */
HVD_EXPORT hvd_status_t hvd_init(void);
/* Registers static process sets at init: set i has ranks
 * set_ranks[offset_i .. offset_i + set_sizes[i]), offsets being the running sum of sizes. */
HVD_EXPORT hvd_status_t hvd_init_with_process_sets(const int32_t* set_ranks,
                                                   const int32_t* set_sizes, int32_t num_sets);
/* The global rank and size the launcher (hvdrun, or mpirun) gave this process, read from
 * its environment exactly as hvd_init() will read them; callable before hvd_init(), e.g. to
 * build the ranks of hvd_init_with_process_sets(). Either pointer may be NULL. A malformed
 * variable is HVD_INVALID_ARGUMENT naming it. Outside a launcher: rank 0, size 1. */
HVD_EXPORT hvd_status_t hvd_launch_topology(int32_t* rank, int32_t* size);
HVD_EXPORT hvd_status_t hvd_shutdown(void);
/* Elastic workers (started by `hvdrun --elastic`): hvd_init() gets rank and size from hvdrun's
 * elastic driver instead of the environment, and a removed worker's hvd_init() fails with
 * HVD_ABORTED ("... has been removed from the elastic job: ..."). hvd_elastic_round gives the
 * driver's number of the round this process is in, whether one of its members is new (then
 * every member must take the state from rank 0) and the host-change timestamp the round
 * already reflects; HVD_PRECONDITION_FAILED outside an
 * elastic round. hvd_elastic_host_update gives the driver's latest host change: *timestamp
 * 0 = none yet, *flags HVD_HOSTS_REMOVED | HVD_HOSTS_ADDED (one request to hvdrun). */
#define HVD_HOSTS_REMOVED 1
#define HVD_HOSTS_ADDED 2
HVD_EXPORT hvd_status_t hvd_elastic_round(int64_t* round, int32_t* joined,
                                          int64_t* hosts_timestamp);
HVD_EXPORT hvd_status_t hvd_elastic_host_update(int64_t* timestamp, int32_t* flags);
/* This worker has the training state of its current elastic round (it received it from rank 0,
 * or holds it as a survivor): hvd.elastic.run calls it after each successful state sync. Once
 * any worker said so, hvdrun re-forms a failed round only around workers that did, and ends the
 * job ("No hosts from previous set remaining, unable to broadcast state") when none is left,
 * instead of restarting training from a new worker's initial state. HVD_PRECONDITION_FAILED
 * outside an elastic round. */
HVD_EXPORT hvd_status_t hvd_elastic_synced(void);
HVD_EXPORT hvd_status_t hvd_abort(const char* reason);
/* Tells hvdrun that this rank is failing on its own (text: what failed, e.g. an uncaught
 * exception), before its exit shuts the runtime down and fails its peers, so that hvdrun's
 * failure summary names this rank first. HVD_OK where there is no hvdrun to tell (MPI, one
 * rank); the Python package calls it from sys.excepthook. */
HVD_EXPORT hvd_status_t hvd_report_failure(const char* text);
HVD_EXPORT hvd_status_t hvd_is_initialized(int32_t* initialized);
/* Message of the last call on this thread that did not return HVD_OK; "" if none. */
HVD_EXPORT const char* hvd_last_error(void);
HVD_EXPORT const char* hvd_status_name(hvd_status_t status);

/* ---- topology (HVD_NOT_INITIALIZED before hvd_init) ------------------------------------ */
HVD_EXPORT hvd_status_t hvd_rank(int32_t* out);
HVD_EXPORT hvd_status_t hvd_size(int32_t* out);
HVD_EXPORT hvd_status_t hvd_local_rank(int32_t* out);
HVD_EXPORT hvd_status_t hvd_local_size(int32_t* out);
HVD_EXPORT hvd_status_t hvd_cross_rank(int32_t* out);
HVD_EXPORT hvd_status_t hvd_cross_size(int32_t* out);
HVD_EXPORT hvd_status_t hvd_is_homogeneous(int32_t* out);

/* ---- collectives (all asynchronous) --------------------------------------------------- */
HVD_EXPORT hvd_status_t hvd_allreduce(const hvd_tensor_t* input, hvd_tensor_t* output,
                                      const hvd_op_options_t* options, hvd_handle_t* handle);
/* All tensors of a group are negotiated and fused together; one handle for the group.
 * options->name names the group; member i is "<name>.<i>". */
HVD_EXPORT hvd_status_t hvd_grouped_allreduce(const hvd_tensor_t* inputs, hvd_tensor_t* outputs,
                                              int32_t count, const hvd_op_options_t* options,
                                              hvd_handle_t* handle);
/* Concatenates along dim 0; the first dimension may differ between ranks. */
HVD_EXPORT hvd_status_t hvd_allgather(const hvd_tensor_t* input, const hvd_op_options_t* options,
                                      hvd_handle_t* handle);
HVD_EXPORT hvd_status_t hvd_grouped_allgather(const hvd_tensor_t* inputs, int32_t count,
                                              const hvd_op_options_t* options,
                                              hvd_handle_t* handle);
/* output must have input's shape; on the root it may alias input. */
HVD_EXPORT hvd_status_t hvd_broadcast(const hvd_tensor_t* input, hvd_tensor_t* output,
                                      const hvd_op_options_t* options, hvd_handle_t* handle);
/* splits == NULL: dim 0 divided equally among the set's members. */
HVD_EXPORT hvd_status_t hvd_alltoall(const hvd_tensor_t* input, const hvd_op_options_t* options,
                                     hvd_handle_t* handle);
/* Sum or Average only; dim 0 split across ranks, the first (dim0 % size) ranks get one more row. */
HVD_EXPORT hvd_status_t hvd_reducescatter(const hvd_tensor_t* input,
                                          const hvd_op_options_t* options, hvd_handle_t* handle);
HVD_EXPORT hvd_status_t hvd_grouped_reducescatter(const hvd_tensor_t* inputs, int32_t count,
                                                  const hvd_op_options_t* options,
                                                  hvd_handle_t* handle);
HVD_EXPORT hvd_status_t hvd_barrier(int32_t process_set_id, hvd_handle_t* handle);
/* This rank has no more data: until every rank joined, it contributes zeros to allreduces of
 * the others. Completes when all ranks joined; hvd_join_result() gives the last rank to join. */
HVD_EXPORT hvd_status_t hvd_join(int32_t device, hvd_handle_t* handle);

/* ---- handles -------------------------------------------------------------------------- */
/* *done = 1 when the handle completed (successfully or not). */
HVD_EXPORT hvd_status_t hvd_poll(hvd_handle_t handle, int32_t* done);
/* Waits up to timeout_seconds (< 0: no limit). Returns the op's own status once complete,
 * HVD_IN_PROGRESS if still running at the deadline, HVD_NOT_FOUND for an unknown handle.
 * While no other thread runs the runtime's cycle, the waiting thread runs it itself (no
 * hand-off to the background thread for a synchronous op); a cycle it started ends before the
 * call returns, even past the deadline: microseconds normally, at most the collective timeout
 * (HVD_GLOO_TIMEOUT_SECONDS) when a peer stopped answering. */
HVD_EXPORT hvd_status_t hvd_wait(hvd_handle_t handle, double timeout_seconds);
/* Number of runtime-allocated outputs of a completed handle (allgather/alltoall/
 * reducescatter: one per input tensor); a failed op's status instead (it has none). */
HVD_EXPORT hvd_status_t hvd_num_outputs(hvd_handle_t handle, int32_t* count);
/* Describes output `index` of a completed handle and transfers ownership of out->data to the
 * caller (free with hvd_free or hvd_free_on_stream). May be called once per output.
 * out->device is where the memory is: HVD_DEVICE_CPU for host memory, else the CUDA device
 * ordinal (an output of a GPU op run on NCCL), ready for any stream to use. */
HVD_EXPORT hvd_status_t hvd_output(hvd_handle_t handle, int32_t index, hvd_tensor_t* out);
/* Gives back an output that hvd_output handed over (NULL: nothing), from any thread, also
 * after hvd_shutdown. Only such memory: like free() for malloc's, anything else is undefined;
 * host memory without the runtime's header is reported (an error in the log) and not freed.
 * A device output is freed in stream order after the work queued before the call on its
 * device's legacy default stream: hvd_free_on_stream(data, NULL). */
HVD_EXPORT void hvd_free(void* data);
/* hvd_free for an output the caller's device work may still be using: a device output is freed
 * in the order of `cuda_stream` (a cudaStream_t of its device; NULL: the legacy default
 * stream), after the work queued there before the call (cudaFreeAsync: no synchronize). Work
 * on any other stream that uses the memory must be ordered before that point by the caller
 * (an event, or a synchronize), as with any stream-ordered free (torch's record_stream).
 * hvd.torch passes the device's current stream when the tensor dies. Host outputs: hvd_free. */
HVD_EXPORT void hvd_free_on_stream(void* data, void* cuda_stream);
/* alltoall: rows of dim 0 received from each member of the set. As the list queries below:
 * *count is always set (the set's size), (NULL, 0) asks only for it, and a buffer shorter
 * than the list is HVD_INVALID_ARGUMENT. */
HVD_EXPORT hvd_status_t hvd_received_splits(hvd_handle_t handle, int32_t* splits, int32_t capacity,
                                            int32_t* count);
HVD_EXPORT hvd_status_t hvd_join_result(hvd_handle_t handle, int32_t* last_joined_rank);
/* Frees the handle and any output not taken. Releasing an incomplete handle is
 * HVD_PRECONDITION_FAILED. An op's tensor names stay reserved until its handle is released:
 * enqueueing another op under a name whose handle is not released yet is
 * HVD_INVALID_ARGUMENT (Horovod's duplicate-name error), on every rank alike. */
HVD_EXPORT hvd_status_t hvd_release(hvd_handle_t handle);

/* ---- process sets --------------------------------------------------------------------- */
/* Set 0 is the global set. Adding/removing after init needs HVD_DYNAMIC_PROCESS_SETS=1
 * (HVD_PRECONDITION_FAILED otherwise); every rank must make the same calls in the same order. */
HVD_EXPORT hvd_status_t hvd_add_process_set(const int32_t* ranks, int32_t count, int32_t* id);
HVD_EXPORT hvd_status_t hvd_remove_process_set(int32_t id);
HVD_EXPORT hvd_status_t hvd_process_set_rank(int32_t id, int32_t* rank); /* -1 if not a member */
HVD_EXPORT hvd_status_t hvd_process_set_size(int32_t id, int32_t* size);
HVD_EXPORT hvd_status_t hvd_process_set_included(int32_t id, int32_t* included);
/* The list queries (these two and hvd_received_splits) set *count always; passing (NULL, 0)
 * asks only for the count, a buffer shorter than the list is HVD_INVALID_ARGUMENT. */
HVD_EXPORT hvd_status_t hvd_process_set_ranks(int32_t id, int32_t* ranks, int32_t capacity,
                                              int32_t* count);
HVD_EXPORT hvd_status_t hvd_process_set_ids(int32_t* ids, int32_t capacity, int32_t* count);

/* ---- timeline ------------------------------------------------------------------------- */
/* Need HVD_TIMELINE set at init (a path, or DYNAMIC): HVD_PRECONDITION_FAILED otherwise,
 * HVD_NOT_INITIALIZED before init. Global rank 0 writes `path` (starting again switches to a
 * new file); on other ranks both calls succeed and do nothing. */
HVD_EXPORT hvd_status_t hvd_start_timeline(const char* path, int32_t mark_cycles);
HVD_EXPORT hvd_status_t hvd_stop_timeline(void);

/* ---- build information ---------------------------------------------------------------- */
#define HVD_BUILT_GLOO 0x1u
#define HVD_BUILT_MPI 0x2u
#define HVD_BUILT_NCCL 0x4u
#define HVD_BUILT_CUDA 0x8u
HVD_EXPORT hvd_status_t hvd_build_flags(uint32_t* flags);
/* NCCL_VERSION_CODE of the NCCL the GPU path was built against (22809 for 2.28.9), 0 in a
 * build without it: what Horovod's nccl_built() returns. */
HVD_EXPORT hvd_status_t hvd_nccl_version(int32_t* version);
/* The controller in use after init, as Horovod's gloo_enabled()/mpi_enabled() answer:
 * HVD_BUILT_GLOO under hvdrun's rendezvous (its shm, tcp or gloo transports: the role of
 * horovodrun's Gloo launch), HVD_BUILT_MPI under mpirun (HVD_CPU_OPERATIONS=mpi or an mpirun
 * launch); a single process (no launcher, or -np 1) reports the same for its launch without
 * starting either: HVD_BUILT_MPI under mpirun or HVD_CONTROLLER=mpi, HVD_BUILT_GLOO otherwise. */
HVD_EXPORT hvd_status_t hvd_enabled_flags(uint32_t* flags);
HVD_EXPORT const char* hvd_version(void);

#ifdef __cplusplus
} /* extern "C" */
#endif

#endif /* HVD_C_API_H_ */
