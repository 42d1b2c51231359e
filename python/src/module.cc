// hvd._hvd_c: the Python binding of libhvd's C API (hvd/c_api.h), and nothing else.
//
// Tensors cross this boundary as plain descriptors (data address, dtype code, shape, device);
// the framework glue (torch, numpy) lives in Python, so the extension has no torch headers and
// no coupling to torch's C++ ABI. Runtime-allocated outputs come back as OutputBuffer objects
// (host memory, the buffer protocol) or DeviceBuffer objects (CUDA memory,
// __cuda_array_interface__), both DLPack producers (dlpack_export.h), which hand the memory back
// when the last view is gone (output_buffers.h).
//
// Every call that can block or contend with the runtime's background thread runs with the
// GIL released. A failing call raises hvd._hvd_c.Error (a RuntimeError) whose `status` is the
// hvd_status_t and whose message is hvd_last_error() of that call.
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <algorithm>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "output_buffers.h"
#include "runtime_api.h"
#include "stack_dump.h"

namespace py = pybind11;

namespace hvd::python {
namespace {

RuntimeApi g_api{};
std::string g_loaded_path;
PyObject* g_error_type = nullptr;  // hvd._hvd_c.Error, owned by the module

// Seconds per hvd_wait slice; between slices the GIL is taken to notice Ctrl-C.
constexpr double kWaitSliceSeconds = 0.2;

const RuntimeApi& Api() {
  if (g_loaded_path.empty()) {
    throw std::runtime_error("hvd runtime library not loaded (hvd._hvd_c.load() was not called)");
  }
  return g_api;
}

[[noreturn]] void Raise(hvd_status_t status, const std::string& message, bool in_wait = false) {
  std::string text = message;
  if (text.empty()) {
    const char* name = g_api.status_name != nullptr ? g_api.status_name(status) : nullptr;
    text = name != nullptr ? name : "hvd error " + std::to_string(static_cast<int>(status));
  }
  py::object error = py::reinterpret_borrow<py::object>(g_error_type)(text);
  error.attr("status") = static_cast<int>(status);
  // True when the operation itself failed (hvd_wait), false when enqueueing it was refused.
  error.attr("in_wait") = in_wait;
  PyErr_SetObject(g_error_type, error.ptr());
  throw py::error_already_set();
}

// Runs `call` (returning hvd_status_t) without the GIL and raises on failure.
template <typename Call>
void Check(Call&& call) {
  hvd_status_t status;
  std::string message;
  {
    py::gil_scoped_release release;
    status = call();
    if (status != HVD_OK) {
      const char* last = g_api.last_error();
      message = last != nullptr ? last : "";
    }
  }
  if (status != HVD_OK) {
    Raise(status, message);
  }
}

// (data address, dtype code, shape, device) as built by hvd/_tensor_desc helpers in Python.
using TensorDesc = std::tuple<uintptr_t, int, std::vector<int64_t>, int>;

hvd_tensor_t ToTensor(const TensorDesc& desc) {
  const auto& [address, dtype, shape, device] = desc;
  if (shape.size() > HVD_MAX_DIMS) {
    throw py::value_error("tensor has " + std::to_string(shape.size()) +
                          " dimensions; hvd supports at most " + std::to_string(HVD_MAX_DIMS));
  }
  hvd_tensor_t tensor{};
  tensor.data = reinterpret_cast<void*>(address);
  tensor.dtype = static_cast<hvd_dtype_t>(dtype);
  tensor.ndim = static_cast<int32_t>(shape.size());
  for (size_t i = 0; i < shape.size(); ++i) {
    tensor.shape[i] = shape[i];
  }
  tensor.device = device;
  return tensor;
}

std::vector<hvd_tensor_t> ToTensors(const std::vector<TensorDesc>& descs) {
  std::vector<hvd_tensor_t> tensors;
  tensors.reserve(descs.size());
  for (const TensorDesc& desc : descs) {
    tensors.push_back(ToTensor(desc));
  }
  return tensors;
}

// Options with the lifetime of one enqueue call; `name` and `splits` are owned here.
// The CUDA stream set_cuda_stream() named for this thread's next collective (0: the default
// stream); the next Options takes it and clears it. hvd.torch sets it at the end of _prepare;
// if a later argument check raises before the enqueue, the stream is taken by this thread's
// next Options instead, which is harmless: CPU ops ignore it, and a CUDA op's own _prepare
// has set its stream by then.
thread_local uintptr_t g_cuda_stream = 0;

struct Options {
  std::optional<std::string> name;
  std::vector<int32_t> splits;
  hvd_op_options_t raw{};

  Options(std::optional<std::string> op_name, int32_t process_set_id) : name(std::move(op_name)) {
    Api().op_options_init(&raw);
    raw.name = name ? name->c_str() : nullptr;
    raw.process_set_id = process_set_id;
    raw.cuda_stream = reinterpret_cast<void*>(g_cuda_stream);
    g_cuda_stream = 0;
  }
  void SetReduction(int op, double prescale, double postscale) {
    raw.reduce_op = static_cast<hvd_reduce_op_t>(op);
    raw.prescale_factor = prescale;
    raw.postscale_factor = postscale;
  }
  void SetSplits(std::vector<int32_t> values) {
    splits = std::move(values);
    raw.splits = splits.data();
    raw.num_splits = static_cast<int32_t>(splits.size());
  }
};

// Synchronous calls interrupted in their wait (Ctrl-C, a signal handler that raised). The handle
// stays in flight, and once the peers arrive the runtime still reads the call's inputs and writes
// its outputs: memory that the caller's objects own (a torch tensor, a numpy array), which Python
// would free as the exception unwinds the caller, for torch's allocator or malloc to hand out
// again. So those objects are kept here, with the handle, until it completes; each later
// synchronous call, each wait and shutdown release the completed ones (and their handles).
// Never destroyed: its objects must not be released after the interpreter is gone.
struct Interrupted {
  hvd_handle_t handle;
  py::object keep;
};
std::vector<Interrupted>* const g_interrupted = new std::vector<Interrupted>();

// Releases the interrupted calls whose handles completed (or that the runtime no longer knows:
// after a shutdown). Called with the GIL held.
void ReleaseCompletedInterrupted() {
  if (g_interrupted->empty() || g_loaded_path.empty()) return;
  // The completed ones leave the list first and their objects go after: dropping a tensor may
  // run Python (a weakref callback, __del__) that calls hvd again, which must find the list whole.
  std::vector<Interrupted> completed;
  for (auto it = g_interrupted->begin(); it != g_interrupted->end();) {
    int32_t done = 0;
    if (g_api.poll(it->handle, &done) == HVD_OK && done == 0) {
      ++it;
      continue;
    }
    (void)g_api.release(it->handle);
    completed.push_back(std::move(*it));
    it = g_interrupted->erase(it);
  }
}

// The handle of this thread's last enqueue (0: none since take_last_enqueued). An enqueue
// releases the GIL, and a signal's exception (Ctrl-C) is raised as the call returns, before the
// Python caller has stored the handle: the caller then takes it from here and hands it, with the
// objects that own its memory, to keep_until_done.
thread_local hvd_handle_t g_last_enqueued = 0;

// Enqueues through `call` (an hvd_* enqueue writing the handle) and returns the handle,
// remembered as this thread's last. The interrupted calls that completed are released first, so
// that a name they held (a barrier's, a join's) is free again.
template <typename Call>
hvd_handle_t Enqueued(Call&& call) {
  ReleaseCompletedInterrupted();
  const hvd_handle_t handle = Out<hvd_handle_t>(std::forward<Call>(call));
  g_last_enqueued = handle;
  return handle;
}

void Wait(hvd_handle_t handle) {
  ReleaseCompletedInterrupted();
  for (;;) {
    hvd_status_t status;
    std::string message;
    {
      py::gil_scoped_release release;
      status = Api().wait(handle, kWaitSliceSeconds);
      if (status != HVD_OK && status != HVD_IN_PROGRESS) {
        message = g_api.last_error();
      }
    }
    if (status == HVD_OK) {
      return;
    }
    if (status != HVD_IN_PROGRESS) {
      Raise(status, message, /*in_wait=*/true);
    }
    if (PyErr_CheckSignals() != 0) {
      throw py::error_already_set();
    }
  }
}

// The memory behind `obj`: an int is an address (torch's data_ptr()); anything else must
// export a C-contiguous buffer (a numpy array), read through the buffer protocol. The caller
// keeps `obj` alive for as long as the address is used.
uintptr_t AddressOf(py::handle obj, bool writable) {
  if (PyLong_Check(obj.ptr())) {
    const uintptr_t address = PyLong_AsUnsignedLongLong(obj.ptr());
    if (PyErr_Occurred()) throw py::error_already_set();
    return address;
  }
  Py_buffer view;
  const int flags = PyBUF_C_CONTIGUOUS | (writable ? PyBUF_WRITABLE : 0);
  if (PyObject_GetBuffer(obj.ptr(), &view, flags) != 0) throw py::error_already_set();
  const auto address = reinterpret_cast<uintptr_t>(view.buf);
  PyBuffer_Release(&view);
  return address;
}

// A tensor from the synchronous fast path's plain arguments: the shape is any sequence of
// ints (torch.Size, tuple), read without building a std::vector.
hvd_tensor_t PlainTensor(uintptr_t address, int dtype, py::handle shape) {
  hvd_tensor_t tensor{};
  const Py_ssize_t ndim = PySequence_Size(shape.ptr());
  if (ndim < 0) throw py::error_already_set();
  if (ndim > HVD_MAX_DIMS) {
    throw py::value_error("tensor has " + std::to_string(ndim) +
                          " dimensions; hvd supports at most " + std::to_string(HVD_MAX_DIMS));
  }
  for (Py_ssize_t i = 0; i < ndim; ++i) {
    py::object item = py::reinterpret_steal<py::object>(PySequence_GetItem(shape.ptr(), i));
    if (!item) throw py::error_already_set();
    tensor.shape[i] = PyLong_AsLongLong(item.ptr());
    if (tensor.shape[i] == -1 && PyErr_Occurred()) throw py::error_already_set();
  }
  tensor.data = reinterpret_cast<void*>(address);
  tensor.dtype = static_cast<hvd_dtype_t>(dtype);
  tensor.ndim = static_cast<int32_t>(ndim);
  tensor.device = HVD_DEVICE_CPU;
  return tensor;
}

// Calls `call(&value)` through Check and returns the value it wrote.
template <typename T, typename Call>
T Out(Call&& call) {
  T value{};
  Check([&] { return call(&value); });
  return value;
}

std::vector<int32_t> GetList(const std::function<hvd_status_t(int32_t*, int32_t, int32_t*)>& fn,
                             int32_t capacity) {
  std::vector<int32_t> values(static_cast<size_t>(capacity));
  int32_t count = 0;
  Check([&] { return fn(values.data(), capacity, &count); });
  values.resize(static_cast<size_t>(std::min(count, capacity)));
  return values;
}

// `name` (a str or None: a generated name) as the options' name, without a copy: valid while
// the caller's object lives.
void SetName(hvd_op_options_t* options, py::handle name) {
  options->name = name.is_none() ? nullptr : PyUnicode_AsUTF8(name.ptr());
  if (!name.is_none() && options->name == nullptr) throw py::error_already_set();
}

// What a synchronous call's memory belongs to: its input and output arguments (numpy arrays
// themselves, or the addresses of torch tensors) and `keep` (the torch tensors).
struct Owners {
  py::handle input, output, keep;
};

// The synchronous collectives' fast path (hvd.torch's and hvd.numpy's ops when no autograd
// graph is recorded): enqueue with `options.wait_now` set, wait, run `done(handle)` (taking the
// outputs) and release, in one call from Python; the GIL released once for the enqueue and
// then per wait slice (Ctrl-C is noticed between slices, as in Wait). Errors carry `in_wait`.
// When the wait is interrupted the handle stays in flight and is not released (its name stays
// reserved), as with an interrupted synchronize(), and `owners` are kept until it completes.
template <typename Enqueue, typename Done>
auto RunNow(hvd_op_options_t* options, py::handle name, Owners owners, Enqueue&& enqueue,
            Done&& done) {
  ReleaseCompletedInterrupted();
  SetName(options, name);
  options->wait_now = 1;  // waited for below: this thread runs the cycle itself
  hvd_handle_t handle = 0;
  hvd_status_t status;
  std::string message;
  {
    py::gil_scoped_release release;
    status = enqueue(&handle);
    if (status == HVD_OK) status = g_api.wait(handle, kWaitSliceSeconds);
    if (status != HVD_OK && status != HVD_IN_PROGRESS) message = g_api.last_error();
  }
  if (handle == 0) Raise(status, message);  // refused at enqueue
  while (status == HVD_IN_PROGRESS) {
    if (PyErr_CheckSignals() != 0) {      // the handle stays in flight, and its memory with it
      py::error_already_set interrupted;  // PyErr_Fetch: the tuple below must not see it set
      g_interrupted->push_back({handle, py::make_tuple(owners.input, owners.output, owners.keep)});
      throw interrupted;
    }
    py::gil_scoped_release release;
    status = g_api.wait(handle, kWaitSliceSeconds);
    if (status != HVD_OK && status != HVD_IN_PROGRESS) message = g_api.last_error();
  }
  if (status != HVD_OK) {
    (void)g_api.release(handle);
    Raise(status, message, /*in_wait=*/true);
  }
  struct Release {  // also when `done` throws
    hvd_handle_t handle;
    ~Release() { (void)g_api.release(handle); }
  } releaser{handle};
  return done(handle);
}

hvd_op_options_t NowOptions(int32_t process_set_id) {
  hvd_op_options_t options;
  Api().op_options_init(&options);
  options.process_set_id = process_set_id;
  return options;
}

// Output `index` of a completed handle, owned by the returned object.
std::unique_ptr<OutputBuffer> TakeOutput(hvd_handle_t handle, int32_t index) {
  hvd_tensor_t tensor{};
  Check([&] { return Api().output(handle, index, &tensor); });
  if (tensor.device != HVD_DEVICE_CPU) {  // only host memory here (the synchronous CPU calls)
    g_api.free_on_stream(tensor.data, nullptr);
    Raise(HVD_INTERNAL, "output " + std::to_string(index) + " of handle " + std::to_string(handle) +
                            " is memory of CUDA device " + std::to_string(tensor.device) +
                            ", not host memory");
  }
  return std::make_unique<OutputBuffer>(tensor);
}

// TakeOutput for any op: an OutputBuffer (host memory) or a DeviceBuffer (CUDA memory).
py::object TakeAnyOutput(hvd_handle_t handle, int32_t index) {
  hvd_tensor_t tensor{};
  Check([&] { return Api().output(handle, index, &tensor); });
  if (tensor.device != HVD_DEVICE_CPU) return py::cast(std::make_unique<DeviceBuffer>(tensor));
  return py::cast(std::make_unique<OutputBuffer>(tensor));
}

// An allreduce's arguments from the plain ones allreduce_now and allreduce_start take.
struct PlainAllreduce {
  hvd_tensor_t input, output;
  hvd_op_options_t options;
  PlainAllreduce(py::handle in, py::handle out, int dtype, py::handle shape, int op,
                 double prescale, double postscale, int32_t process_set_id, int32_t device,
                 uintptr_t stream)
      : input(PlainTensor(AddressOf(in, false), dtype, shape)),
        options(NowOptions(process_set_id)) {
    input.device = device;
    output = input;
    output.data = reinterpret_cast<void*>(AddressOf(out, true));
    options.reduce_op = static_cast<hvd_reduce_op_t>(op);
    options.prescale_factor = prescale;
    options.postscale_factor = postscale;
    options.cuda_stream = reinterpret_cast<void*>(stream);
  }
};

void AllreduceNow(py::handle in, py::handle out, int dtype, py::handle shape, py::handle name,
                  int op, double prescale, double postscale, int32_t process_set_id, int32_t device,
                  uintptr_t stream, py::handle keep) {
  PlainAllreduce a(in, out, dtype, shape, op, prescale, postscale, process_set_id, device, stream);
  RunNow(
      &a.options, name, {in, out, keep},
      [&](hvd_handle_t* h) { return g_api.allreduce(&a.input, &a.output, &a.options, h); },
      [](hvd_handle_t) { return 0; });
}

// allreduce_now's arguments, enqueued only: the handle for wait/release (hvd.torch's
// allreduce_async(_) of a contiguous tensor, DistributedOptimizer's gradients).
hvd_handle_t AllreduceStart(py::handle in, py::handle out, int dtype, py::handle shape,
                            py::handle name, int op, double prescale, double postscale,
                            int32_t process_set_id, int32_t device, uintptr_t stream) {
  PlainAllreduce a(in, out, dtype, shape, op, prescale, postscale, process_set_id, device, stream);
  SetName(&a.options, name);
  return Enqueued(
      [&](hvd_handle_t* h) { return g_api.allreduce(&a.input, &a.output, &a.options, h); });
}

// The same for the other collectives on host memory. broadcast_now writes `out`; the others
// return the runtime's output (alltoall_now: with the rows received from each member).
void BroadcastNow(py::handle in, py::handle out, int dtype, py::handle shape, int32_t root_rank,
                  py::handle name, int32_t process_set_id, py::handle keep) {
  hvd_tensor_t input = PlainTensor(AddressOf(in, false), dtype, shape);
  hvd_tensor_t output = input;
  output.data = reinterpret_cast<void*>(AddressOf(out, true));
  hvd_op_options_t options = NowOptions(process_set_id);
  options.root_rank = root_rank;
  RunNow(
      &options, name, {in, out, keep},
      [&](hvd_handle_t* h) { return g_api.broadcast(&input, &output, &options, h); },
      [](hvd_handle_t) { return 0; });
}

std::unique_ptr<OutputBuffer> AllgatherNow(py::handle in, int dtype, py::handle shape,
                                           py::handle name, int32_t process_set_id,
                                           py::handle keep) {
  hvd_tensor_t input = PlainTensor(AddressOf(in, false), dtype, shape);
  hvd_op_options_t options = NowOptions(process_set_id);
  return RunNow(
      &options, name, {in, py::none(), keep},
      [&](hvd_handle_t* h) { return g_api.allgather(&input, &options, h); },
      [](hvd_handle_t h) { return TakeOutput(h, 0); });
}

std::unique_ptr<OutputBuffer> ReducescatterNow(py::handle in, int dtype, py::handle shape,
                                               py::handle name, int op, double prescale,
                                               double postscale, int32_t process_set_id,
                                               py::handle keep) {
  hvd_tensor_t input = PlainTensor(AddressOf(in, false), dtype, shape);
  hvd_op_options_t options = NowOptions(process_set_id);
  options.reduce_op = static_cast<hvd_reduce_op_t>(op);
  options.prescale_factor = prescale;
  options.postscale_factor = postscale;
  return RunNow(
      &options, name, {in, py::none(), keep},
      [&](hvd_handle_t* h) { return g_api.reducescatter(&input, &options, h); },
      [](hvd_handle_t h) { return TakeOutput(h, 0); });
}

py::tuple AlltoallNow(py::handle in, int dtype, py::handle shape,
                      std::optional<std::vector<int32_t>> splits, py::handle name,
                      int32_t process_set_id, int32_t set_size, py::handle keep) {
  hvd_tensor_t input = PlainTensor(AddressOf(in, false), dtype, shape);
  hvd_op_options_t options = NowOptions(process_set_id);
  if (splits) {
    options.splits = splits->data();
    options.num_splits = static_cast<int32_t>(splits->size());
  }
  return RunNow(
      &options, name, {in, py::none(), keep},
      [&](hvd_handle_t* h) { return g_api.alltoall(&input, &options, h); },
      [&](hvd_handle_t h) {
        std::vector<int32_t> received =
            GetList([&](int32_t* out, int32_t capacity,
                        int32_t* count) { return Api().received_splits(h, out, capacity, count); },
                    set_size);
        return py::make_tuple(TakeOutput(h, 0), py::cast(received));
      });
}

int32_t GetInt(hvd_status_t (*fn)(int32_t*)) { return Out<int32_t>(fn); }

py::str Load(const std::vector<std::string>& candidates) {
  if (!g_loaded_path.empty()) {
    return g_loaded_path;
  }
  LoadResult result = LoadRuntime(candidates, &g_api);
  if (!result.ok) {
    std::string message =
        "cannot load the hvd runtime library (libhvd). hvdrun names it in "
        "HVD_RUNTIME_LIBRARY; otherwise the copy installed beside the hvd package is used. "
        "Tried:\n" +
        (result.error.empty() ? std::string("  (no candidate paths)\n") : result.error);
    throw py::import_error(message);
  }
  g_loaded_path = result.path;
  return g_loaded_path;
}

void BindLifecycle(py::module_& m) {
  m.def("load", &Load, py::arg("candidates"),
        "dlopen the first loadable libhvd of `candidates`; ImportError naming each otherwise");
  m.def("loaded_path", [] { return g_loaded_path; });
  m.def("route_stack_dumps", &hvd::python::RouteStackDumps, py::arg("signo"),
        py::arg("all_threads_signo"), py::arg("main_only_signo"),
        "hvdrun's stack requests on `signo` dumped from the main thread only (stack_dump.h)");
  m.def("unroute_stack_dumps", &hvd::python::UnrouteStackDumps,
        "drop hvdrun's stack requests from now on (before the interpreter's finalization)");
  m.def(
      "init",
      [](std::optional<std::vector<int32_t>> set_ranks, std::vector<int32_t> set_sizes) {
        if (!set_ranks) {
          Check([] { return Api().init(); });
          return;
        }
        Check([&] {
          return Api().init_with_process_sets(set_ranks->data(), set_sizes.data(),
                                              static_cast<int32_t>(set_sizes.size()));
        });
      },
      py::arg("set_ranks") = py::none(), py::arg("set_sizes") = std::vector<int32_t>{});
  m.def("shutdown", [] {
    Check([] { return Api().shutdown(); });
    ReleaseCompletedInterrupted();  // their handles failed with the shutdown
  });
  m.def("abort",
        [](const std::string& reason) { Check([&] { return Api().abort(reason.c_str()); }); });
  m.def("report_failure",
        [](const std::string& text) { Check([&] { return Api().report_failure(text.c_str()); }); });
  m.def("is_initialized", [] { return GetInt(Api().is_initialized) != 0; });
  m.def("rank", [] { return GetInt(Api().rank); });
  m.def("size", [] { return GetInt(Api().size); });
  m.def("local_rank", [] { return GetInt(Api().local_rank); });
  m.def("local_size", [] { return GetInt(Api().local_size); });
  m.def("cross_rank", [] { return GetInt(Api().cross_rank); });
  m.def("cross_size", [] { return GetInt(Api().cross_size); });
  m.def("is_homogeneous", [] { return GetInt(Api().is_homogeneous) != 0; });
  m.def("elastic_round", [] {
    int64_t round = 0, hosts_timestamp = 0;
    int32_t joined = 0;
    Check([&] { return Api().elastic_round(&round, &joined, &hosts_timestamp); });
    return py::make_tuple(round, joined != 0, hosts_timestamp);
  });
  m.def("elastic_host_update", [] {
    int64_t timestamp = 0;
    int32_t flags = 0;
    Check([&] { return Api().elastic_host_update(&timestamp, &flags); });
    return py::make_tuple(timestamp, flags);
  });
  m.def("elastic_synced", [] { Check([] { return Api().elastic_synced(); }); });
  m.def("start_timeline", [](const std::string& path, bool mark_cycles) {
    Check([&] { return Api().start_timeline(path.c_str(), mark_cycles ? 1 : 0); });
  });
  m.def("stop_timeline", [] { Check([] { return Api().stop_timeline(); }); });
  m.def("build_flags", [] { return Out<uint32_t>(Api().build_flags); });
  m.def("nccl_version", [] { return Out<int32_t>(Api().nccl_version); });
  m.def("enabled_flags", [] { return Out<uint32_t>(Api().enabled_flags); });
  m.def("version", [] { return std::string(Api().version()); });
}

void BindCollectives(py::module_& m) {
  using OptName = std::optional<std::string>;
  m.def(
      "set_cuda_stream", [](uintptr_t stream) { g_cuda_stream = stream; }, py::arg("stream"),
      "The cudaStream_t (an address; 0 = the default stream) producing the GPU tensors of this "
      "thread's next collective call; that call takes it");
  m.def("allreduce_now", &AllreduceNow, py::arg("input"), py::arg("output"), py::arg("dtype"),
        py::arg("shape"), py::arg("name"), py::arg("op"), py::arg("prescale"), py::arg("postscale"),
        py::arg("process_set_id"), py::arg("device") = static_cast<int32_t>(HVD_DEVICE_CPU),
        py::arg("stream") = static_cast<uintptr_t>(0), py::arg("keep") = py::none(),
        "Allreduce of `input` into `output` (addresses, or C-contiguous buffers such as numpy "
        "arrays; may be the same; on CUDA device `device` with producer stream `stream` when "
        "device >= 0) and wait: enqueue, wait and release in one call. `keep`: the objects "
        "owning addresses given (kept until the op completes if the wait is interrupted)");
  m.def("allreduce_start", &AllreduceStart, py::arg("input"), py::arg("output"), py::arg("dtype"),
        py::arg("shape"), py::arg("name"), py::arg("op"), py::arg("prescale"), py::arg("postscale"),
        py::arg("process_set_id"), py::arg("device") = static_cast<int32_t>(HVD_DEVICE_CPU),
        py::arg("stream") = static_cast<uintptr_t>(0),
        "allreduce_now's enqueue alone: returns the handle");
  m.def("broadcast_now", &BroadcastNow, py::arg("input"), py::arg("output"), py::arg("dtype"),
        py::arg("shape"), py::arg("root_rank"), py::arg("name"), py::arg("process_set_id"),
        py::arg("keep") = py::none(),
        "Broadcast into `output` (host memory, as allreduce_now's) and wait, in one call");
  m.def("allgather_now", &AllgatherNow, py::arg("input"), py::arg("dtype"), py::arg("shape"),
        py::arg("name"), py::arg("process_set_id"), py::arg("keep") = py::none(),
        "Allgather of host memory and wait, in one call; returns the output buffer");
  m.def("reducescatter_now", &ReducescatterNow, py::arg("input"), py::arg("dtype"),
        py::arg("shape"), py::arg("name"), py::arg("op"), py::arg("prescale"), py::arg("postscale"),
        py::arg("process_set_id"), py::arg("keep") = py::none(),
        "Reducescatter of host memory and wait, in one call; returns the output buffer");
  m.def("alltoall_now", &AlltoallNow, py::arg("input"), py::arg("dtype"), py::arg("shape"),
        py::arg("splits"), py::arg("name"), py::arg("process_set_id"), py::arg("set_size"),
        py::arg("keep") = py::none(),
        "Alltoall of host memory and wait, in one call; returns (output buffer, received "
        "splits)");
  m.def("allreduce", [](const TensorDesc& in, const TensorDesc& out, OptName name, int op,
                        double prescale, double postscale, int32_t process_set_id) {
    hvd_tensor_t input = ToTensor(in), output = ToTensor(out);
    Options options(std::move(name), process_set_id);
    options.SetReduction(op, prescale, postscale);
    return Enqueued(
        [&](hvd_handle_t* h) { return Api().allreduce(&input, &output, &options.raw, h); });
  });
  m.def("grouped_allreduce",
        [](const std::vector<TensorDesc>& ins, const std::vector<TensorDesc>& outs, OptName name,
           int op, double prescale, double postscale, int32_t process_set_id) {
          std::vector<hvd_tensor_t> inputs = ToTensors(ins), outputs = ToTensors(outs);
          if (inputs.size() != outputs.size()) {
            throw py::value_error("grouped_allreduce: inputs and outputs differ in length");
          }
          Options options(std::move(name), process_set_id);
          options.SetReduction(op, prescale, postscale);
          return Enqueued([&](hvd_handle_t* h) {
            return Api().grouped_allreduce(inputs.data(), outputs.data(),
                                           static_cast<int32_t>(inputs.size()), &options.raw, h);
          });
        });
  m.def("allgather", [](const TensorDesc& in, OptName name, int32_t process_set_id) {
    hvd_tensor_t input = ToTensor(in);
    Options options(std::move(name), process_set_id);
    return Enqueued([&](hvd_handle_t* h) { return Api().allgather(&input, &options.raw, h); });
  });
  m.def("grouped_allgather",
        [](const std::vector<TensorDesc>& ins, OptName name, int32_t process_set_id) {
          std::vector<hvd_tensor_t> inputs = ToTensors(ins);
          Options options(std::move(name), process_set_id);
          return Enqueued([&](hvd_handle_t* h) {
            return Api().grouped_allgather(inputs.data(), static_cast<int32_t>(inputs.size()),
                                           &options.raw, h);
          });
        });
  m.def("broadcast", [](const TensorDesc& in, const TensorDesc& out, int32_t root_rank,
                        OptName name, int32_t process_set_id) {
    hvd_tensor_t input = ToTensor(in), output = ToTensor(out);
    Options options(std::move(name), process_set_id);
    options.raw.root_rank = root_rank;
    return Enqueued(
        [&](hvd_handle_t* h) { return Api().broadcast(&input, &output, &options.raw, h); });
  });
  m.def("alltoall", [](const TensorDesc& in, std::optional<std::vector<int32_t>> splits,
                       OptName name, int32_t process_set_id) {
    hvd_tensor_t input = ToTensor(in);
    Options options(std::move(name), process_set_id);
    if (splits) {
      options.SetSplits(std::move(*splits));
    }
    return Enqueued([&](hvd_handle_t* h) { return Api().alltoall(&input, &options.raw, h); });
  });
  m.def("reducescatter", [](const TensorDesc& in, OptName name, int op, double prescale,
                            double postscale, int32_t process_set_id) {
    hvd_tensor_t input = ToTensor(in);
    Options options(std::move(name), process_set_id);
    options.SetReduction(op, prescale, postscale);
    return Enqueued([&](hvd_handle_t* h) { return Api().reducescatter(&input, &options.raw, h); });
  });
  m.def("grouped_reducescatter", [](const std::vector<TensorDesc>& ins, OptName name, int op,
                                    double prescale, double postscale, int32_t process_set_id) {
    std::vector<hvd_tensor_t> inputs = ToTensors(ins);
    Options options(std::move(name), process_set_id);
    options.SetReduction(op, prescale, postscale);
    return Enqueued([&](hvd_handle_t* h) {
      return Api().grouped_reducescatter(inputs.data(), static_cast<int32_t>(inputs.size()),
                                         &options.raw, h);
    });
  });
  m.def("barrier", [](int32_t process_set_id) {
    return Enqueued([&](hvd_handle_t* h) { return Api().barrier(process_set_id, h); });
  });
  m.def("join", [](int32_t device) {
    return Enqueued([&](hvd_handle_t* h) { return Api().join(device, h); });
  });
}

void BindHandles(py::module_& m) {
  BindOutputBuffers(m, &g_api);
  m.def("poll", [](hvd_handle_t handle) {
    return Out<int32_t>([&](int32_t* done) { return Api().poll(handle, done); }) != 0;
  });
  m.def("wait", &Wait, py::arg("handle"),
        "Blocks until the handle completes; raises Error with the op's status on failure");
  m.def("num_outputs", [](hvd_handle_t handle) {
    return Out<int32_t>([&](int32_t* count) { return Api().num_outputs(handle, count); });
  });
  m.def(
      "output", &TakeAnyOutput, py::arg("handle"), py::arg("index"),
      "Output `index` of a completed handle: an OutputBuffer (host memory, buffer protocol) or "
      "a DeviceBuffer (CUDA memory, __cuda_array_interface__); both have __dlpack__; `device` says "
      "which");
  m.def("received_splits", [](hvd_handle_t handle, int32_t capacity) {
    return GetList([&](int32_t* out, int32_t cap,
                       int32_t* count) { return Api().received_splits(handle, out, cap, count); },
                   capacity);
  });
  m.def("join_result", [](hvd_handle_t handle) {
    return Out<int32_t>([&](int32_t* last) { return Api().join_result(handle, last); });
  });
  m.def("release", [](hvd_handle_t handle) { Check([&] { return Api().release(handle); }); });
  m.def(
      "take_last_enqueued",
      []() -> py::object {
        const hvd_handle_t handle = g_last_enqueued;
        g_last_enqueued = 0;
        if (handle == 0) return py::none();
        return py::int_(handle);
      },
      "This thread's last enqueued handle since the last call (None: none), and forgets it");
  m.def(
      "keep_until_done",
      [](hvd_handle_t handle, py::object keep) {
        g_interrupted->push_back({handle, std::move(keep)});
      },
      py::arg("handle"), py::arg("keep"),
      "Keeps `keep` (what owns the op's memory) until `handle` completes, then releases the "
      "handle: an op whose caller was interrupted (released at the next enqueue, wait or "
      "shutdown)");
}

void BindProcessSets(py::module_& m) {
  m.def("add_process_set", [](std::vector<int32_t> ranks) {
    return Out<int32_t>([&](int32_t* id) {
      return Api().add_process_set(ranks.data(), static_cast<int32_t>(ranks.size()), id);
    });
  });
  m.def("remove_process_set",
        [](int32_t id) { Check([&] { return Api().remove_process_set(id); }); });
  m.def("process_set_rank", [](int32_t id) {
    return Out<int32_t>([&](int32_t* v) { return Api().process_set_rank(id, v); });
  });
  m.def("process_set_size", [](int32_t id) {
    return Out<int32_t>([&](int32_t* v) { return Api().process_set_size(id, v); });
  });
  m.def("process_set_included", [](int32_t id) {
    return Out<int32_t>([&](int32_t* v) { return Api().process_set_included(id, v); }) != 0;
  });
  // The list queries ask for the count first ((NULL, 0) is a count query), then fetch.
  m.def("process_set_ranks", [](int32_t id) {
    auto fetch = [&](int32_t* out, int32_t cap, int32_t* count) {
      return Api().process_set_ranks(id, out, cap, count);
    };
    return GetList(fetch, Out<int32_t>([&](int32_t* n) { return fetch(nullptr, 0, n); }));
  });
  m.def("process_set_ids", [] {
    auto fetch = [](int32_t* out, int32_t cap, int32_t* count) {
      return Api().process_set_ids(out, cap, count);
    };
    return GetList(fetch, Out<int32_t>([&](int32_t* n) { return fetch(nullptr, 0, n); }));
  });
}

void BindConstants(py::module_& m) {
  const std::pair<const char*, int> constants[] = {
      {"OK", HVD_OK},
      {"INVALID_ARGUMENT", HVD_INVALID_ARGUMENT},
      {"TIMEOUT", HVD_TIMEOUT},
      {"REMOTE_ERROR", HVD_REMOTE_ERROR},
      {"ABORTED", HVD_ABORTED},
      {"INTERNAL", HVD_INTERNAL},
      {"NOT_INITIALIZED", HVD_NOT_INITIALIZED},
      {"IN_PROGRESS", HVD_IN_PROGRESS},
      {"PRECONDITION_FAILED", HVD_PRECONDITION_FAILED},
      {"NOT_FOUND", HVD_NOT_FOUND},
      {"UNIMPLEMENTED", HVD_UNIMPLEMENTED},
      {"IO_ERROR", HVD_IO_ERROR},
      {"PERMISSION_DENIED", HVD_PERMISSION_DENIED},
      {"UINT8", HVD_UINT8},
      {"INT8", HVD_INT8},
      {"UINT16", HVD_UINT16},
      {"INT16", HVD_INT16},
      {"INT32", HVD_INT32},
      {"INT64", HVD_INT64},
      {"FLOAT16", HVD_FLOAT16},
      {"FLOAT32", HVD_FLOAT32},
      {"FLOAT64", HVD_FLOAT64},
      {"BOOL", HVD_BOOL},
      {"BFLOAT16", HVD_BFLOAT16},
      {"OP_AVERAGE", HVD_OP_AVERAGE},
      {"OP_SUM", HVD_OP_SUM},
      {"OP_ADASUM", HVD_OP_ADASUM},
      {"OP_MIN", HVD_OP_MIN},
      {"OP_MAX", HVD_OP_MAX},
      {"OP_PRODUCT", HVD_OP_PRODUCT},
      {"BUILT_GLOO", HVD_BUILT_GLOO},
      {"BUILT_MPI", HVD_BUILT_MPI},
      {"BUILT_NCCL", HVD_BUILT_NCCL},
      {"BUILT_CUDA", HVD_BUILT_CUDA},
      {"DEVICE_CPU", HVD_DEVICE_CPU},
      {"MAX_DIMS", HVD_MAX_DIMS},
  };
  for (const auto& [name, value] : constants) {
    m.attr(name) = value;
  }
}

}  // namespace
}  // namespace hvd::python

PYBIND11_MODULE(_hvd_c, m) {
  using namespace hvd::python;
  m.doc() = "Binding of libhvd's C API (hvd/c_api.h); loaded with load(candidates).";
  g_error_type = PyErr_NewExceptionWithDoc(
      "hvd._hvd_c.Error", "A libhvd call failed; `status` is its hvd_status_t code.",
      PyExc_RuntimeError, nullptr);
  m.attr("Error") = py::reinterpret_steal<py::object>(g_error_type);
  BindConstants(m);
  BindLifecycle(m);
  BindCollectives(m);
  BindHandles(m);
  BindProcessSets(m);
}
