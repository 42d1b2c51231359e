// Counting replacements of the process's heap allocation functions, linked into hvd-bench only.
//
// hvd-bench defines malloc/calloc/realloc/memalign/aligned_alloc/posix_memalign/free (forwarding
// to glibc's __libc_* entry points) and every global operator new/delete (on top of that
// malloc). The executable's definitions interpose for every shared object in the process:
// libhvd.so (which references _Znwm, malloc, ... as undefined dynamic symbols; it is linked
// without -Bsymbolic and without a static libstdc++), libgloo, libstdc++ and libc itself. So
// the counters see every allocation of every thread, the runtime's background thread included.
// Each allocation counts once (operator new counts through malloc). Thread-safe (relaxed atomics).
#include "alloc_counter.h"

#include <execinfo.h>
#include <malloc.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <new>

extern "C" {
void* __libc_malloc(size_t size);
void* __libc_calloc(size_t count, size_t size);
void* __libc_realloc(void* p, size_t size);
void* __libc_memalign(size_t alignment, size_t size);
void __libc_free(void* p);
}

namespace {

std::atomic<uint64_t> g_allocations{0};
std::atomic<uint64_t> g_bytes{0};

// HeapTraceArm: backtraces still to print; t_tracing stops the tracer tracing itself.
std::atomic<int> g_trace_left{0};
thread_local bool t_tracing = false;

void Trace(size_t bytes) {
  if (g_trace_left.fetch_sub(1, std::memory_order_relaxed) <= 0) return;
  t_tracing = true;
  char head[96];
  const int n = std::snprintf(head, sizeof(head), "--- allocation of %zu bytes (thread %d)\n",
                              bytes, static_cast<int>(gettid()));
  (void)!write(2, head, static_cast<size_t>(n));
  void* frames[32];
  backtrace_symbols_fd(frames, backtrace(frames, 32), 2);
  t_tracing = false;
}

inline void Count(size_t bytes) {
  g_allocations.fetch_add(1, std::memory_order_relaxed);
  g_bytes.fetch_add(bytes, std::memory_order_relaxed);
  if (g_trace_left.load(std::memory_order_relaxed) > 0 && !t_tracing) Trace(bytes);
}

void* NewOrThrow(size_t size) {
  for (;;) {
    if (void* p = malloc(size == 0 ? 1 : size)) return p;
    std::new_handler handler = std::get_new_handler();
    if (handler == nullptr) throw std::bad_alloc();
    handler();
  }
}

void* AlignedNewOrThrow(size_t size, std::align_val_t alignment) {
  for (;;) {
    if (void* p = memalign(static_cast<size_t>(alignment), size == 0 ? 1 : size)) return p;
    std::new_handler handler = std::get_new_handler();
    if (handler == nullptr) throw std::bad_alloc();
    handler();
  }
}

}  // namespace

// Heap allocations (count, bytes) made by this process so far, all threads.
uint64_t HeapAllocations() { return g_allocations.load(std::memory_order_relaxed); }
uint64_t HeapAllocatedBytes() { return g_bytes.load(std::memory_order_relaxed); }

// Prints a backtrace (symbol names: link with -rdynamic, or resolve the addresses with
// addr2line) to stderr for each of the next `count` allocations of any thread; 0 disarms.
void HeapTraceArm(int count) {
  if (count > 0) {
    void* warm[1];
    backtrace(warm, 1);  // the first call loads libgcc_s (allocates): not while armed
  }
  g_trace_left.store(count, std::memory_order_relaxed);
}

extern "C" {

void* malloc(size_t size) {
  Count(size);
  return __libc_malloc(size);
}

void* calloc(size_t count, size_t size) {
  Count(count * size);
  return __libc_calloc(count, size);
}

void* realloc(void* p, size_t size) {
  Count(size);
  return __libc_realloc(p, size);
}

void* memalign(size_t alignment, size_t size) {
  Count(size);
  return __libc_memalign(alignment, size);
}

void* aligned_alloc(size_t alignment, size_t size) { return memalign(alignment, size); }

int posix_memalign(void** out, size_t alignment, size_t size) {
  if (alignment % sizeof(void*) != 0 || (alignment & (alignment - 1)) != 0) return EINVAL;
  void* p = memalign(alignment, size);
  if (p == nullptr) return ENOMEM;
  *out = p;
  return 0;
}

void free(void* p) { __libc_free(p); }

}  // extern "C"

void* operator new(size_t size) { return NewOrThrow(size); }
void* operator new[](size_t size) { return NewOrThrow(size); }
void* operator new(size_t size, const std::nothrow_t&) noexcept { return malloc(size ? size : 1); }
void* operator new[](size_t size, const std::nothrow_t&) noexcept {
  return malloc(size ? size : 1);
}
void* operator new(size_t size, std::align_val_t a) { return AlignedNewOrThrow(size, a); }
void* operator new[](size_t size, std::align_val_t a) { return AlignedNewOrThrow(size, a); }
void* operator new(size_t size, std::align_val_t a, const std::nothrow_t&) noexcept {
  return memalign(static_cast<size_t>(a), size ? size : 1);
}
void* operator new[](size_t size, std::align_val_t a, const std::nothrow_t&) noexcept {
  return memalign(static_cast<size_t>(a), size ? size : 1);
}
void operator delete(void* p) noexcept { free(p); }
void operator delete[](void* p) noexcept { free(p); }
void operator delete(void* p, size_t) noexcept { free(p); }
void operator delete[](void* p, size_t) noexcept { free(p); }
void operator delete(void* p, const std::nothrow_t&) noexcept { free(p); }
void operator delete[](void* p, const std::nothrow_t&) noexcept { free(p); }
void operator delete(void* p, std::align_val_t) noexcept { free(p); }
void operator delete[](void* p, std::align_val_t) noexcept { free(p); }
void operator delete(void* p, size_t, std::align_val_t) noexcept { free(p); }
void operator delete[](void* p, size_t, std::align_val_t) noexcept { free(p); }
void operator delete(void* p, std::align_val_t, const std::nothrow_t&) noexcept { free(p); }
void operator delete[](void* p, std::align_val_t, const std::nothrow_t&) noexcept { free(p); }
