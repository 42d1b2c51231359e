// The CUDA runtime calls hvd makes, on emulated GPUs (see README.md). Device memory is host
// memory the host cannot touch: each allocation is a PROT_NONE range (the address handed out)
// with a separate read-write alias that only the emulator's streams use, so a host read or
// write of device memory faults as it would on a GPU (where it reads garbage or faults).
#include "test/gpu_emulator/device.h"

#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <map>
#include <mutex>
#include <random>
#include <thread>
#include <unordered_map>

namespace hvd::gpu_emulator {
namespace {

int EnvInt(const char* name, int fallback) {
  const char* v = std::getenv(name);
  return v != nullptr && *v != '\0' ? std::atoi(v) : fallback;
}

thread_local int tl_device = 0;
thread_local cudaError_t tl_last_error = cudaSuccess;

}  // namespace

// (device.h)
cudaError_t Fail(cudaError_t err) {
  if (err != cudaSuccess) tl_last_error = err;
  return err;
}

namespace {

struct Allocation {
  size_t bytes;
  size_t mapped;
  char* backing;
  int device;
};

struct Memory {
  std::mutex mu;
  std::map<const char*, Allocation> device;  // by the address handed out
  std::unordered_map<const void*, size_t> pinned;
};

// Never destroyed: streams may still run at exit.
Memory& Mem() {
  static auto* m = new Memory;
  return *m;
}

size_t PageRound(size_t bytes) {
  const size_t page = static_cast<size_t>(sysconf(_SC_PAGESIZE));
  return (std::max<size_t>(bytes, 1) + page - 1) / page * page;
}

cudaError_t AllocDevice(void** out, size_t bytes) {
  if (out == nullptr) return Fail(cudaErrorInvalidValue);
  const size_t mapped = PageRound(bytes);
  void* view = mmap(nullptr, mapped, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  void* backing = mmap(nullptr, mapped, PROT_READ | PROT_WRITE,
                       MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  if (view == MAP_FAILED || backing == MAP_FAILED) {
    if (view != MAP_FAILED) munmap(view, mapped);
    if (backing != MAP_FAILED) munmap(backing, mapped);
    return Fail(cudaErrorMemoryAllocation);
  }
  // Fresh device memory is not zero on a GPU: neither is it here.
  std::memset(backing, 0xA5, std::min<size_t>(mapped, size_t{1} << 20));
  Memory& m = Mem();
  std::lock_guard<std::mutex> lock(m.mu);
  m.device[static_cast<char*>(view)] =
      Allocation{bytes, mapped, static_cast<char*>(backing), tl_device};
  *out = view;
  return cudaSuccess;
}

cudaError_t FreeDeviceNow(void* p) {
  Allocation a{};
  {
    Memory& m = Mem();
    std::lock_guard<std::mutex> lock(m.mu);
    auto it = m.device.find(static_cast<char*>(p));
    if (it == m.device.end()) return cudaErrorInvalidValue;
    a = it->second;
    m.device.erase(it);
  }
  munmap(p, a.mapped);
  munmap(a.backing, a.mapped);
  return cudaSuccess;
}

// One device's default stream, and every stream created.
struct Streams {
  std::mutex mu;
  std::map<int, std::shared_ptr<Stream>> defaults;
  std::unordered_map<cudaStream_t, std::shared_ptr<Stream>> created;
};

Streams& TheStreams() {
  static auto* s = new Streams;
  return *s;
}

}  // namespace

class Stream {
 public:
  explicit Stream(int device) : device_(device), delay_us_(EnvInt("HVD_GPU_EMU_DELAY_US", 0)) {
    std::thread([this] { Run(); }).detach();  // streams live for the process (TheStreams)
  }
  int device() const { return device_; }

  void Push(std::function<void()> work) {
    std::lock_guard<std::mutex> lock(mu_);
    queue_.push_back(std::move(work));
    ++queued_;
    cv_.notify_all();
  }

  void Drain() {
    std::unique_lock<std::mutex> lock(mu_);
    const uint64_t target = queued_;
    cv_.wait(lock, [&] { return done_ >= target; });
  }

 private:
  void Run() {
    std::minstd_rand random(static_cast<unsigned>(reinterpret_cast<uintptr_t>(this)));
    tl_device = device_;
    for (;;) {
      std::function<void()> work;
      {
        std::unique_lock<std::mutex> lock(mu_);
        cv_.wait(lock, [&] { return !queue_.empty(); });
        work = std::move(queue_.front());
        queue_.pop_front();
      }
      if (delay_us_ > 0) {
        std::this_thread::sleep_for(std::chrono::microseconds(random() % (delay_us_ + 1)));
      }
      work();
      std::lock_guard<std::mutex> lock(mu_);
      ++done_;
      cv_.notify_all();
    }
  }

  const int device_;
  const int delay_us_;
  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<std::function<void()>> queue_;
  uint64_t queued_ = 0;
  uint64_t done_ = 0;
};

namespace {

std::mutex g_inject_mu;
std::string g_inject_function;  // guarded by g_inject_mu
int g_inject_error = 0;
int g_inject_skip = 0;  // calls of g_inject_function let through before the failing one
std::atomic<bool> g_inject_armed{false};

}  // namespace

int Injected(const char* function) {
  if (!g_inject_armed.load()) return 0;
  std::lock_guard<std::mutex> lock(g_inject_mu);
  if (g_inject_function != function) return 0;
  if (g_inject_skip > 0) {
    --g_inject_skip;
    return 0;
  }
  g_inject_armed = false;
  g_inject_function.clear();
  std::fprintf(stderr, "[gpu emulator] %s fails with %d, as asked\n", function, g_inject_error);
  return g_inject_error;
}

int DeviceCount() {
  static const int count = EnvInt("HVD_GPU_EMU_DEVICES", 1);
  return count;
}

int CurrentDevice() { return tl_device; }

bool Locate(const void* p, size_t bytes, Span* out, std::string* why) {
  Memory& m = Mem();
  std::lock_guard<std::mutex> lock(m.mu);
  const char* c = static_cast<const char*>(p);
  auto it = m.device.upper_bound(c);
  if (it != m.device.begin()) {
    --it;
    const Allocation& a = it->second;
    if (c >= it->first && c < it->first + a.mapped) {
      const size_t at = static_cast<size_t>(c - it->first);
      if (at + bytes > a.bytes) {
        *why = "device range " + std::to_string(bytes) + " bytes at offset " + std::to_string(at) +
               " runs past the end of its " + std::to_string(a.bytes) + "-byte allocation";
        return false;
      }
      *out = Span{Where::kDevice, a.device, a.backing + at};
      return true;
    }
  }
  for (const auto& [base, size] : m.pinned) {
    const char* b = static_cast<const char*>(base);
    if (c >= b && c < b + size) {
      *out = Span{Where::kPinned, -1, const_cast<char*>(c)};
      return true;
    }
  }
  *out = Span{Where::kHost, -1, const_cast<char*>(c)};
  return true;
}

std::shared_ptr<Stream> StreamOf(cudaStream_t handle) {
  Streams& s = TheStreams();
  std::lock_guard<std::mutex> lock(s.mu);
  if (handle == nullptr || handle == cudaStreamLegacy || handle == cudaStreamPerThread) {
    auto& stream = s.defaults[tl_device];
    if (stream == nullptr) stream = std::make_shared<Stream>(tl_device);
    return stream;
  }
  auto it = s.created.find(handle);
  return it == s.created.end() ? nullptr : it->second;
}

void Enqueue(const std::shared_ptr<Stream>& stream, std::function<void()> work) {
  stream->Push(std::move(work));
}

void Drain(const std::shared_ptr<Stream>& stream) { stream->Drain(); }

int StreamDevice(const std::shared_ptr<Stream>& stream) { return stream->device(); }

namespace {

// An event: the generation last recorded on it, and the one its stream has reached.
struct Event {
  std::mutex mu;
  std::condition_variable cv;
  uint64_t recorded = 0;
  uint64_t reached = 0;
};

struct Events {
  std::mutex mu;
  std::unordered_map<cudaEvent_t, std::shared_ptr<Event>> live;
};

Events& TheEvents() {
  static auto* e = new Events;
  return *e;
}

std::shared_ptr<Event> EventOf(cudaEvent_t handle) {
  Events& e = TheEvents();
  std::lock_guard<std::mutex> lock(e.mu);
  auto it = e.live.find(handle);
  return it == e.live.end() ? nullptr : it->second;
}

// A copy's two ends, checked against the kind the caller names (stricter than CUDA, which
// lets some wrong kinds through on unified addressing: hvd should name them right).
cudaError_t CopyEnds(void* to, const void* from, size_t bytes, cudaMemcpyKind kind, Span* dst,
                     Span* src) {
  std::string why;
  if (!Locate(to, bytes, dst, &why) || !Locate(from, bytes, src, &why)) {
    std::fprintf(stderr, "[gpu emulator] cudaMemcpy: %s\n", why.c_str());
    return cudaErrorInvalidValue;
  }
  const bool to_dev = dst->where == Where::kDevice;
  const bool from_dev = src->where == Where::kDevice;
  bool ok = true;
  switch (kind) {
    case cudaMemcpyHostToHost:
      ok = !to_dev && !from_dev;
      break;
    case cudaMemcpyHostToDevice:
      ok = to_dev && !from_dev;
      break;
    case cudaMemcpyDeviceToHost:
      ok = !to_dev && from_dev;
      break;
    case cudaMemcpyDeviceToDevice:
      ok = to_dev && from_dev;
      break;
    default:
      break;
  }
  if (!ok) {
    std::fprintf(stderr,
                 "[gpu emulator] cudaMemcpy kind %d, but the destination is %s memory and the "
                 "source %s memory\n",
                 static_cast<int>(kind), to_dev ? "device" : "host", from_dev ? "device" : "host");
    return cudaErrorInvalidValue;
  }
  return cudaSuccess;
}

int g_pool_tag = 0;

}  // namespace
}  // namespace hvd::gpu_emulator

using namespace hvd::gpu_emulator;  // NOLINT: the C entry points below

extern "C" {

// The emulator's own entry point (tests find it with dlsym): the next call of `function` (a CUDA
// runtime or NCCL function the emulator answers) fails with `error` (a cudaError_t, or an
// ncclResult_t for NCCL), once, as a failing driver or kernel would.
__attribute__((visibility("default"))) void hvd_gpu_emulator_fail_next(const char* function,
                                                                       int error) {
  std::lock_guard<std::mutex> lock(g_inject_mu);
  g_inject_function = function;
  g_inject_error = error;
  g_inject_skip = 0;
  g_inject_armed = true;
}

// The same for the call of `function` after the next `skip` (which succeed): a test walks a
// failure through every call of one function an op makes.
__attribute__((visibility("default"))) void hvd_gpu_emulator_fail_later(const char* function,
                                                                        int error, int skip) {
  std::lock_guard<std::mutex> lock(g_inject_mu);
  g_inject_function = function;
  g_inject_error = error;
  g_inject_skip = skip;
  g_inject_armed = true;
}

cudaError_t cudaGetDeviceCount(int* count) {
  if (count == nullptr) return Fail(cudaErrorInvalidValue);
  *count = DeviceCount();
  return *count > 0 ? cudaSuccess : Fail(cudaErrorNoDevice);
}

cudaError_t cudaSetDevice(int device) {
  if (device < 0 || device >= DeviceCount()) return Fail(cudaErrorInvalidDevice);
  tl_device = device;
  return cudaSuccess;
}

cudaError_t cudaGetDevice(int* device) {
  if (device == nullptr) return Fail(cudaErrorInvalidValue);
  if (DeviceCount() <= 0) return Fail(cudaErrorNoDevice);
  *device = tl_device;
  return cudaSuccess;
}

cudaError_t cudaDeviceGetPCIBusId(char* bus, int len, int device) {
  if (bus == nullptr || device < 0 || device >= DeviceCount()) return Fail(cudaErrorInvalidValue);
  std::snprintf(bus, static_cast<size_t>(len), "00000000:%02X:00.0", 0x10 + device);
  return cudaSuccess;
}

cudaError_t cudaDeviceGetAttribute(int* value, enum cudaDeviceAttr attr, int device) {
  if (value == nullptr || device < 0 || device >= DeviceCount()) return Fail(cudaErrorInvalidValue);
  *value = attr == cudaDevAttrMemoryPoolsSupported ? 1 : 0;
  return cudaSuccess;
}

cudaError_t cudaGetLastError(void) {
  const cudaError_t err = tl_last_error;
  tl_last_error = cudaSuccess;
  return err;
}

cudaError_t cudaPeekAtLastError(void) { return tl_last_error; }

const char* cudaGetErrorName(cudaError_t err) {
  switch (err) {
    case cudaSuccess:
      return "cudaSuccess";
    case cudaErrorInvalidValue:
      return "cudaErrorInvalidValue";
    case cudaErrorMemoryAllocation:
      return "cudaErrorMemoryAllocation";
    case cudaErrorNoDevice:
      return "cudaErrorNoDevice";
    case cudaErrorInvalidDevice:
      return "cudaErrorInvalidDevice";
    case cudaErrorInvalidResourceHandle:
      return "cudaErrorInvalidResourceHandle";
    case cudaErrorNotReady:
      return "cudaErrorNotReady";
    case cudaErrorLaunchFailure:
      return "cudaErrorLaunchFailure";
    case cudaErrorIllegalAddress:
      return "cudaErrorIllegalAddress";
    default:
      return "cudaErrorUnknown";
  }
}

const char* cudaGetErrorString(cudaError_t err) {
  switch (err) {
    case cudaSuccess:
      return "no error";
    case cudaErrorInvalidValue:
      return "invalid argument";
    case cudaErrorMemoryAllocation:
      return "out of memory";
    case cudaErrorNoDevice:
      return "no CUDA-capable device is detected";
    case cudaErrorInvalidDevice:
      return "invalid device ordinal";
    case cudaErrorInvalidResourceHandle:
      return "invalid resource handle";
    case cudaErrorNotReady:
      return "device not ready";
    case cudaErrorLaunchFailure:
      return "unspecified launch failure";
    case cudaErrorIllegalAddress:
      return "an illegal memory access was encountered";
    default:
      return "unknown error";
  }
}

cudaError_t cudaMalloc(void** p, size_t bytes) {
  if (const int e = Injected("cudaMalloc")) return Fail(static_cast<cudaError_t>(e));
  return AllocDevice(p, bytes);
}

cudaError_t cudaFree(void* p) {
  if (p == nullptr) return cudaSuccess;
  // cudaFree synchronizes the device: every stream of it.
  cudaDeviceSynchronize();
  return Fail(FreeDeviceNow(p));
}

cudaError_t cudaHostAlloc(void** p, size_t bytes, unsigned int /*flags*/) {
  if (const int e = Injected("cudaHostAlloc")) return Fail(static_cast<cudaError_t>(e));
  if (p == nullptr) return Fail(cudaErrorInvalidValue);
  void* mem = std::aligned_alloc(4096, PageRound(bytes));
  if (mem == nullptr) return Fail(cudaErrorMemoryAllocation);
  Memory& m = Mem();
  std::lock_guard<std::mutex> lock(m.mu);
  m.pinned[mem] = bytes;
  *p = mem;
  return cudaSuccess;
}

cudaError_t cudaMallocHost(void** p, size_t bytes) { return cudaHostAlloc(p, bytes, 0); }

cudaError_t cudaFreeHost(void* p) {
  if (p == nullptr) return cudaSuccess;
  cudaDeviceSynchronize();  // as CUDA's: the device's work first
  {
    Memory& m = Mem();
    std::lock_guard<std::mutex> lock(m.mu);
    if (m.pinned.erase(p) == 0) return Fail(cudaErrorInvalidValue);
  }
  std::free(p);
  return cudaSuccess;
}

cudaError_t cudaPointerGetAttributes(cudaPointerAttributes* attr, const void* p) {
  if (attr == nullptr) return Fail(cudaErrorInvalidValue);
  Span span;
  std::string why;
  if (!Locate(p, 0, &span, &why)) return Fail(cudaErrorInvalidValue);
  *attr = cudaPointerAttributes{};
  switch (span.where) {
    case Where::kDevice:
      attr->type = cudaMemoryTypeDevice;
      attr->device = span.device;
      attr->devicePointer = const_cast<void*>(p);
      break;
    case Where::kPinned:
      attr->type = cudaMemoryTypeHost;
      attr->device = tl_device;
      attr->hostPointer = const_cast<void*>(p);
      attr->devicePointer = const_cast<void*>(p);
      break;
    case Where::kHost:
      attr->type = cudaMemoryTypeUnregistered;
      attr->device = -2;
      break;
  }
  return cudaSuccess;
}

cudaError_t cudaStreamCreateWithFlags(cudaStream_t* out, unsigned int /*flags*/) {
  if (out == nullptr) return Fail(cudaErrorInvalidValue);
  auto stream = std::make_shared<Stream>(tl_device);
  auto handle = reinterpret_cast<cudaStream_t>(stream.get());
  Streams& s = TheStreams();
  std::lock_guard<std::mutex> lock(s.mu);
  s.created[handle] = std::move(stream);
  *out = handle;
  return cudaSuccess;
}

cudaError_t cudaStreamCreate(cudaStream_t* out) { return cudaStreamCreateWithFlags(out, 0); }

cudaError_t cudaStreamDestroy(cudaStream_t handle) {
  // The work queued on it still runs (as on a GPU); its thread stays, idle.
  Streams& s = TheStreams();
  std::lock_guard<std::mutex> lock(s.mu);
  auto it = s.created.find(handle);
  if (it == s.created.end()) return Fail(cudaErrorInvalidResourceHandle);
  static auto* retired = new std::vector<std::shared_ptr<Stream>>;
  retired->push_back(std::move(it->second));
  s.created.erase(it);
  return cudaSuccess;
}

cudaError_t cudaStreamSynchronize(cudaStream_t handle) {
  auto stream = StreamOf(handle);
  if (stream == nullptr) return Fail(cudaErrorInvalidResourceHandle);
  Drain(stream);
  return cudaSuccess;
}

cudaError_t cudaDeviceSynchronize(void) {
  std::vector<std::shared_ptr<Stream>> all;
  {
    Streams& s = TheStreams();
    std::lock_guard<std::mutex> lock(s.mu);
    for (auto& [device, stream] : s.defaults) {
      if (device == tl_device) all.push_back(stream);
    }
    for (auto& [handle, stream] : s.created) {
      if (stream->device() == tl_device) all.push_back(stream);
    }
  }
  for (auto& stream : all) Drain(stream);
  return cudaSuccess;
}

cudaError_t cudaEventCreateWithFlags(cudaEvent_t* out, unsigned int /*flags*/) {
  if (const int e = Injected("cudaEventCreateWithFlags")) return Fail(static_cast<cudaError_t>(e));
  if (out == nullptr) return Fail(cudaErrorInvalidValue);
  auto event = std::make_shared<Event>();
  auto handle = reinterpret_cast<cudaEvent_t>(event.get());
  Events& e = TheEvents();
  std::lock_guard<std::mutex> lock(e.mu);
  e.live[handle] = std::move(event);
  *out = handle;
  return cudaSuccess;
}

cudaError_t cudaEventCreate(cudaEvent_t* out) { return cudaEventCreateWithFlags(out, 0); }

cudaError_t cudaEventDestroy(cudaEvent_t handle) {
  Events& e = TheEvents();
  std::lock_guard<std::mutex> lock(e.mu);
  return e.live.erase(handle) == 1 ? cudaSuccess : Fail(cudaErrorInvalidResourceHandle);
}

cudaError_t cudaEventRecord(cudaEvent_t handle, cudaStream_t stream_handle) {
  if (const int e = Injected("cudaEventRecord")) return Fail(static_cast<cudaError_t>(e));
  auto event = EventOf(handle);
  auto stream = StreamOf(stream_handle);
  if (event == nullptr || stream == nullptr) return Fail(cudaErrorInvalidResourceHandle);
  uint64_t generation;
  {
    std::lock_guard<std::mutex> lock(event->mu);
    generation = ++event->recorded;
  }
  Enqueue(stream, [event, generation] {
    std::lock_guard<std::mutex> lock(event->mu);
    event->reached = std::max(event->reached, generation);
    event->cv.notify_all();
  });
  return cudaSuccess;
}

cudaError_t cudaEventQuery(cudaEvent_t handle) {
  if (const int e = Injected("cudaEventQuery")) return Fail(static_cast<cudaError_t>(e));
  auto event = EventOf(handle);
  if (event == nullptr) return Fail(cudaErrorInvalidResourceHandle);
  std::lock_guard<std::mutex> lock(event->mu);
  // Not an error for cudaGetLastError: cudaErrorNotReady is not recorded.
  return event->reached >= event->recorded ? cudaSuccess : cudaErrorNotReady;
}

cudaError_t cudaEventSynchronize(cudaEvent_t handle) {
  auto event = EventOf(handle);
  if (event == nullptr) return Fail(cudaErrorInvalidResourceHandle);
  std::unique_lock<std::mutex> lock(event->mu);
  const uint64_t target = event->recorded;
  event->cv.wait(lock, [&] { return event->reached >= target; });
  return cudaSuccess;
}

cudaError_t cudaStreamWaitEvent(cudaStream_t stream_handle, cudaEvent_t handle,
                                unsigned int /*flags*/) {
  if (const int e = Injected("cudaStreamWaitEvent")) return Fail(static_cast<cudaError_t>(e));
  auto event = EventOf(handle);
  auto stream = StreamOf(stream_handle);
  if (event == nullptr || stream == nullptr) return Fail(cudaErrorInvalidResourceHandle);
  uint64_t target;
  {
    std::lock_guard<std::mutex> lock(event->mu);
    target = event->recorded;  // what was recorded when this was called, as CUDA
  }
  Enqueue(stream, [event, target] {
    std::unique_lock<std::mutex> lock(event->mu);
    event->cv.wait(lock, [&] { return event->reached >= target; });
  });
  return cudaSuccess;
}

cudaError_t cudaMemcpyAsync(void* to, const void* from, size_t bytes, cudaMemcpyKind kind,
                            cudaStream_t stream_handle) {
  if (const int e = Injected("cudaMemcpyAsync")) return Fail(static_cast<cudaError_t>(e));
  auto stream = StreamOf(stream_handle);
  if (stream == nullptr) return Fail(cudaErrorInvalidResourceHandle);
  if (bytes == 0) return cudaSuccess;
  Span dst, src;
  const cudaError_t err = CopyEnds(to, from, bytes, kind, &dst, &src);
  if (err != cudaSuccess) return Fail(err);
  Enqueue(stream, [dst, src, bytes] { std::memmove(dst.backing, src.backing, bytes); });
  return cudaSuccess;
}

cudaError_t cudaMemcpy(void* to, const void* from, size_t bytes, cudaMemcpyKind kind) {
  const cudaError_t err = cudaMemcpyAsync(to, from, bytes, kind, nullptr);
  if (err != cudaSuccess) return err;
  return cudaStreamSynchronize(nullptr);
}

cudaError_t cudaMemsetAsync(void* p, int value, size_t bytes, cudaStream_t stream_handle) {
  if (const int e = Injected("cudaMemsetAsync")) return Fail(static_cast<cudaError_t>(e));
  auto stream = StreamOf(stream_handle);
  if (stream == nullptr) return Fail(cudaErrorInvalidResourceHandle);
  if (bytes == 0) return cudaSuccess;
  Span span;
  std::string why;
  if (!Locate(p, bytes, &span, &why) || span.where != Where::kDevice) {
    std::fprintf(stderr, "[gpu emulator] cudaMemset of %p: %s\n", p,
                 why.empty() ? "not device memory" : why.c_str());
    return Fail(cudaErrorInvalidValue);
  }
  Enqueue(stream, [span, value, bytes] { std::memset(span.backing, value, bytes); });
  return cudaSuccess;
}

cudaError_t cudaMemset(void* p, int value, size_t bytes) {
  const cudaError_t err = cudaMemsetAsync(p, value, bytes, nullptr);
  if (err != cudaSuccess) return err;
  return cudaStreamSynchronize(nullptr);
}

cudaError_t cudaMemPoolCreate(cudaMemPool_t* pool, const cudaMemPoolProps* /*props*/) {
  if (pool == nullptr) return Fail(cudaErrorInvalidValue);
  *pool = reinterpret_cast<cudaMemPool_t>(&g_pool_tag);
  return cudaSuccess;
}

cudaError_t cudaMemPoolDestroy(cudaMemPool_t) { return cudaSuccess; }

cudaError_t cudaMemPoolSetAttribute(cudaMemPool_t pool, enum cudaMemPoolAttr, void* value) {
  return pool == nullptr || value == nullptr ? Fail(cudaErrorInvalidValue) : cudaSuccess;
}

cudaError_t cudaMallocFromPoolAsync(void** p, size_t bytes, cudaMemPool_t pool,
                                    cudaStream_t stream_handle) {
  if (const int e = Injected("cudaMallocFromPoolAsync")) return Fail(static_cast<cudaError_t>(e));
  if (pool == nullptr || StreamOf(stream_handle) == nullptr) return Fail(cudaErrorInvalidValue);
  return AllocDevice(p, bytes);
}

cudaError_t cudaFreeAsync(void* p, cudaStream_t stream_handle) {
  auto stream = StreamOf(stream_handle);
  if (stream == nullptr) return Fail(cudaErrorInvalidResourceHandle);
  if (p == nullptr) return cudaSuccess;
  Span span;
  std::string why;
  if (!Locate(p, 0, &span, &why) || span.where != Where::kDevice) {
    std::fprintf(stderr, "[gpu emulator] cudaFreeAsync of %p: not device memory\n", p);
    return Fail(cudaErrorInvalidValue);
  }
  // Freed in stream order: after the work already queued on the stream.
  Enqueue(stream, [p] { FreeDeviceNow(p); });
  return cudaSuccess;
}

}  // extern "C"
