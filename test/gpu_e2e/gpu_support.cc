// The helpers of hvd_gpu_worker (gpu_worker.h): checks, host and device tensors, outputs.
#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <sstream>

#include "gpu_worker.h"

namespace hvd_gpu {
namespace {

const char* MemoryTypeName(cudaMemoryType type) {
  switch (type) {
    case cudaMemoryTypeUnregistered:
      return "unregistered host memory";
    case cudaMemoryTypeHost:
      return "pinned host memory";
    case cudaMemoryTypeDevice:
      return "device memory";
    case cudaMemoryTypeManaged:
      return "managed memory";
  }
  return "memory of an unknown type";
}

// HVD_<name>, else Horovod's HOROVOD_<name>, lower-cased ("" when neither is set).
std::string Knob(const std::string& name) {
  const char* v = std::getenv(("HVD_" + name).c_str());
  if (v == nullptr) v = std::getenv(("HOROVOD_" + name).c_str());
  std::string s = v == nullptr ? "" : v;
  for (char& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

}  // namespace

const DType& DTypeOf(hvd_dtype_t id) {
  const DType* d = hvd_worker::FindDType(id);
  if (d == nullptr) Die("unknown dtype " + std::to_string(id), HVD_INVALID_ARGUMENT);
  return *d;
}

Context& Ctx() {
  static Context context;
  return context;
}

void Fail(const std::string& what) {
  ++Ctx().failures;
  std::fprintf(stderr, "[%s] rank %d: %s\n", Ctx().scenario.c_str(), Ctx().rank, what.c_str());
}

void Die(const std::string& what, hvd_status_t status) {
  std::fprintf(stderr, "[%s] rank %d: FATAL %s: %s: %s\n", Ctx().scenario.c_str(), Ctx().rank,
               what.c_str(), hvd_status_name(status), hvd_last_error());
  std::fflush(stderr);
  std::exit(1);
}

void Require(hvd_status_t status, const std::string& what) {
  if (status != HVD_OK) Die(what, status);
}

void DieCuda(const std::string& what, cudaError_t err) {
  std::fprintf(stderr, "[%s] rank %d: FATAL %s: %s: %s\n", Ctx().scenario.c_str(), Ctx().rank,
               what.c_str(), cudaGetErrorName(err), cudaGetErrorString(err));
  std::fflush(stderr);
  std::exit(1);
}

void RequireCuda(cudaError_t err, const std::string& what) {
  if (err != cudaSuccess) DieCuda(what, err);
}

void WaitOk(hvd_handle_t handle, const std::string& what) {
  const hvd_status_t s = hvd_wait(handle, kWaitSeconds);
  if (s == HVD_IN_PROGRESS) Die(what + ": not complete after " + Num(kWaitSeconds) + " s", s);
  Require(s, what);
}

void WaitRelease(hvd_handle_t handle, const std::string& what) {
  WaitOk(handle, what);
  Require(hvd_release(handle), what + ": hvd_release");
}

hvd_op_options_t Options(const std::string& name) {
  static std::deque<std::string> names;  // a deque: c_str() pointers stay valid
  names.push_back(name);
  hvd_op_options_t o;
  hvd_op_options_init(&o);
  o.name = names.back().c_str();
  return o;
}

std::string Shape(const std::vector<int64_t>& shape) {
  std::string s = "[";
  for (size_t i = 0; i < shape.size(); ++i) s += (i ? ", " : "") + std::to_string(shape[i]);
  return s + "]";
}

std::string Num(double v) {
  std::ostringstream s;
  s << v;
  return s.str();
}

int64_t Elements(const std::vector<int64_t>& shape) {
  int64_t n = 1;
  for (int64_t d : shape) n *= d;
  return n;
}

bool PowerOfTwo(int64_t n) { return n > 0 && (n & (n - 1)) == 0; }

// ---- tensors ----------------------------------------------------------------------------

HostTensor::HostTensor(hvd_dtype_t dtype, std::vector<int64_t> shape)
    : dtype_(dtype), shape_(std::move(shape)) {
  bytes_.assign(nbytes(), 0);
}

void HostTensor::Set(int64_t i, double v) {
  hvd_worker::SetElement(bytes_.data() + i * DTypeOf(dtype_).size, dtype_, v);
}

double HostTensor::Get(int64_t i) const {
  return hvd_worker::GetElement(bytes_.data() + i * DTypeOf(dtype_).size, dtype_);
}

DeviceTensor::DeviceTensor(hvd_dtype_t dtype, std::vector<int64_t> shape)
    : dtype_(dtype), shape_(std::move(shape)), device_(Ctx().device) {
  if (nbytes() == 0) return;
  RequireCuda(cudaMalloc(&data_, nbytes()), "cudaMalloc of " + std::to_string(nbytes()) + " bytes");
  RequireCuda(cudaMemset(data_, kSentinelByte, nbytes()), "cudaMemset");
  // cudaMemset runs on the legacy default stream, which a non-blocking stream does not wait for:
  // without this wait the sentinel could land after a caller's stream wrote the tensor. On the
  // GPU machine (2026-11-28) stream_order read sentinels at 2 and 3 NCCL ranks that way; with it,
  // it passed there even behind a 2 GiB copy on the caller's stream.
  RequireCuda(cudaDeviceSynchronize(), "cudaDeviceSynchronize after the sentinel");
}

DeviceTensor::~DeviceTensor() {
  if (data_ == nullptr) return;
  // Reported, not fatal: a failing free at the end of a scenario should not hide its results.
  const cudaError_t err = cudaFree(data_);
  if (err != cudaSuccess) {
    Fail(std::string("cudaFree: ") + cudaGetErrorName(err) + ": " + cudaGetErrorString(err));
  }
}

void DeviceTensor::Upload(const HostTensor& host) {
  if (host.nbytes() != nbytes()) Die("Upload: size mismatch", HVD_INTERNAL);
  if (nbytes() == 0) return;
  RequireCuda(cudaMemcpy(data_, host.data(), nbytes(), cudaMemcpyHostToDevice),
              "cudaMemcpy to the device");
}

HostTensor DeviceTensor::Download() const {
  HostTensor host(dtype_, shape_);
  if (nbytes() == 0) return host;
  RequireCuda(cudaMemcpy(host.data(), data_, nbytes(), cudaMemcpyDeviceToHost),
              "cudaMemcpy from the device");
  return host;
}

hvd_tensor_t DeviceTensor::Desc() const {
  hvd_tensor_t t;
  std::memset(&t, 0, sizeof(t));
  t.data = data_;
  t.dtype = dtype_;
  t.ndim = static_cast<int32_t>(shape_.size());
  for (size_t d = 0; d < shape_.size(); ++d) t.shape[d] = shape_[d];
  t.device = HVD_DEVICE_CUDA(device_);
  return t;
}

HostTensor MakeHost(hvd_dtype_t dtype, std::vector<int64_t> shape,
                    const std::function<double(int64_t)>& value) {
  HostTensor host(dtype, std::move(shape));
  for (int64_t i = 0; i < host.count(); ++i) host.Set(i, value(i));
  return host;
}

DevicePtr MakeDevice(hvd_dtype_t dtype, std::vector<int64_t> shape,
                     const std::function<double(int64_t)>& value) {
  const HostTensor host = MakeHost(dtype, shape, value);
  auto t = std::make_shared<DeviceTensor>(dtype, std::move(shape));
  t->Upload(host);
  return t;
}

// ---- checks -----------------------------------------------------------------------------

void ExpectValues(const std::string& what, const HostTensor& got, const std::vector<double>& want,
                  bool exact) {
  if (static_cast<int64_t>(want.size()) != got.count()) {
    Fail(what + ": expected " + std::to_string(want.size()) + " elements, got " +
         std::to_string(got.count()));
    return;
  }
  const DType& d = DTypeOf(got.dtype());
  double tolerance = 0;
  if (!exact && d.id == HVD_FLOAT16) tolerance = 2e-3;
  if (!exact && d.id == HVD_BFLOAT16) tolerance = 1.6e-2;
  if (!exact && d.id == HVD_FLOAT32) tolerance = 1e-6;
  if (!exact && d.id == HVD_FLOAT64) tolerance = 1e-12;
  int reported = 0, wrong = 0;
  for (int64_t i = 0; i < got.count(); ++i) {
    const double g = got.Get(i), w = d.id == HVD_BOOL ? (want[i] != 0) : want[i];
    // NaN (e.g. a sentinel or garbage) fails both comparisons.
    if (g == w || std::fabs(g - w) <= tolerance * std::max(1.0, std::fabs(w))) continue;
    ++wrong;
    if (reported++ < 4) {
      Fail(what + " (" + d.name + " " + Shape(got.shape()) + "): element " + std::to_string(i) +
           " of " + std::to_string(got.count()) + ": expected " + Num(w) + ", got " + Num(g));
    }
  }
  if (wrong > reported) Fail(what + ": ... " + std::to_string(wrong) + " wrong elements in total");
}

void ExpectDevice(const std::string& what, const DeviceTensor& got, const std::vector<double>& want,
                  bool exact) {
  ExpectValues(what, got.Download(), want, exact);
}

void ExpectOutput(hvd_handle_t handle, int32_t index, const std::string& what, hvd_dtype_t dtype,
                  const std::vector<int64_t>& shape, const std::vector<double>& want,
                  bool on_device, bool exact) {
  const std::string name = what + ": output " + std::to_string(index);
  hvd_tensor_t out;
  Require(hvd_output(handle, index, &out), name + ": hvd_output");
  const std::vector<int64_t> got_shape(out.shape, out.shape + std::clamp(out.ndim, 0, 8));
  const int device = Ctx().device;
  bool readable = true;
  if (out.device != device && out.device != HVD_DEVICE_CPU) {
    Fail(name + ": on device " + std::to_string(out.device) + ", expected CUDA device " +
         std::to_string(device) + (on_device ? "" : " or the CPU"));
    readable = false;
  } else if (out.device == HVD_DEVICE_CPU && on_device) {
    Fail(name + ": host memory (device HVD_DEVICE_CPU), expected memory of CUDA device " +
         std::to_string(device) + ": every rank has a GPU of its own, so the op runs on NCCL");
  }
  // The descriptor must tell the truth: a host read of device memory would crash, a device
  // copy of host memory fail.
  if (readable && out.data != nullptr) {
    cudaPointerAttributes attr;
    std::memset(&attr, 0, sizeof(attr));
    const cudaError_t err = cudaPointerGetAttributes(&attr, out.data);
    if (err != cudaSuccess) {
      cudaGetLastError();  // consumed, so that the next CUDA call does not inherit it
      Fail(name + ": cudaPointerGetAttributes: " + cudaGetErrorName(err));
      readable = false;
    } else {
      const bool is_device =
          attr.type == cudaMemoryTypeDevice || attr.type == cudaMemoryTypeManaged;
      if (out.device >= 0 && (!is_device || attr.device != out.device)) {
        Fail(name + ": described as memory of CUDA device " + std::to_string(out.device) +
             " but it is " + MemoryTypeName(attr.type) +
             (is_device ? " of device " + std::to_string(attr.device) : ""));
        readable = false;
      } else if (out.device == HVD_DEVICE_CPU && is_device) {
        Fail(name + ": described as host memory but it is " + MemoryTypeName(attr.type) +
             " of device " + std::to_string(attr.device));
        readable = false;
      }
    }
  }
  if (out.dtype != dtype || got_shape != shape) {
    Fail(name + ": expected " + DTypeOf(dtype).name + " " + Shape(shape) + ", got " +
         DTypeOf(out.dtype).name + " " + Shape(got_shape));
  } else if (readable) {
    HostTensor copy(dtype, shape);
    if (copy.nbytes() > 0 && out.data == nullptr) {
      Fail(name + ": data is NULL for " + std::to_string(copy.count()) + " elements");
    } else if (copy.nbytes() > 0) {
      RequireCuda(cudaMemcpy(copy.data(), out.data, copy.nbytes(),
                             out.device >= 0 ? cudaMemcpyDeviceToHost : cudaMemcpyHostToHost),
                  name + ": cudaMemcpy");
    }
    ExpectValues(name, copy, want, exact);
  }
  // Both ways c_api.h gives for a device output (the copy above has finished with it).
  static int frees = 0;
  if (out.device >= 0 && frees++ % 2 == 1) {
    hvd_free_on_stream(out.data, nullptr);
  } else {
    hvd_free(out.data);
  }
}

bool DeviceOutputsExpected(const char* op) {
  std::string ops = Knob("GPU_OPERATIONS");
  if (ops.empty()) ops = Knob("GPU_ALLREDUCE");  // Horovod's, read when the former is unset
  const std::string mine = Knob(std::string("GPU_") + op);
  const bool staged =
      ops == "cpu" || ops == "mpi" || ops == "gloo" || mine == "mpi" || mine == "gloo";
  return Ctx().own_gpus && !staged;
}

bool ScaleKernel() {
  static const bool kernel = [] {
    const char* missing = std::getenv("HVD_GPU_EMU_NO_KERNEL_IMAGE");
    return HVD_SCALE_KERNEL == 1 && (missing == nullptr || *missing == '\0');
  }();
  return kernel;
}

bool NcclReduces(const DType& d, hvd_reduce_op_t op, double prescale, double postscale,
                 int32_t members) {
  if (d.id == HVD_INT16 || d.id == HVD_UINT16 || d.id == HVD_BOOL) return false;
  const bool scaled = prescale != 1.0 || postscale != 1.0;
  switch (op) {
    case HVD_OP_SUM:
      return !scaled || (d.is_float && (members > 1 || ScaleKernel()));
    case HVD_OP_AVERAGE:  // a sum scaled by 1/members
      return (!scaled && members == 1) || (d.is_float && (members > 1 || ScaleKernel()));
    case HVD_OP_MIN:
    case HVD_OP_MAX:
    case HVD_OP_PRODUCT:
      return !scaled;
    default:
      return false;
  }
}

void FinishAll(std::vector<Pending>* pending) {
  for (Pending& p : *pending) {
    WaitOk(p.handle, p.what);
    if (p.check) p.check(p.handle);
    Require(hvd_release(p.handle), p.what + ": hvd_release");
  }
  pending->clear();
}

// ---- reductions ----------------------------------------------------------------------------

bool ReductionExact(const DType& d, hvd_reduce_op_t op, double prescale, double postscale,
                    int32_t members) {
  if (!d.is_float) return true;
  int exp = 0;
  const auto power_of_two = [&exp](double f) { return std::frexp(f, &exp) == 0.5; };
  if (!power_of_two(prescale) || !power_of_two(postscale)) return false;
  return op != HVD_OP_AVERAGE || PowerOfTwo(members);
}

void DeviceSumAllreduce(const std::string& name, double mine, double want, int32_t set) {
  DevicePtr t = MakeDevice(HVD_FLOAT32, {4}, [mine](int64_t) { return mine; });
  hvd_tensor_t d = t->Desc();
  hvd_op_options_t o = Options(name);
  o.process_set_id = set;
  hvd_handle_t h = 0;
  Require(hvd_allreduce(&d, &d, &o, &h), "allreduce " + name);
  WaitRelease(h, "allreduce " + name);
  ExpectDevice("allreduce " + name, *t, std::vector<double>(4, want));
}

void GlobalBarrier(const std::string& what) {
  hvd_handle_t h = 0;
  Require(hvd_barrier(0, &h), what);
  WaitRelease(h, what);
}

}  // namespace hvd_gpu
