#ifndef HVD_TEST_SUPPORT_MEMORY_CGROUP_H_
#define HVD_TEST_SUPPORT_MEMORY_CGROUP_H_

#include <cstdint>
#include <memory>
#include <string>

namespace hvd::testing {

// A memory cgroup of its own, below this process's, limited to `limit_bytes` with no swap, so
// that the kernel's OOM killer acts on the one process a test puts in it (a real OOM kill, as a
// rank that outgrows its memory meets one). A process joins it by writing its pid into
// `procs()` (`echo $$ > ...` before exec). Works with cgroup v1 (the memory hierarchy) and v2.
// Removed when the object dies, once the processes in it are gone.
class MemoryCgroup {
 public:
  // nullptr, with the reason in *why_not, where this machine cannot: not root, no memory
  // controller, a read-only cgroup file system.
  static std::unique_ptr<MemoryCgroup> Create(uint64_t limit_bytes, std::string* why_not);
  ~MemoryCgroup();
  MemoryCgroup(const MemoryCgroup&) = delete;
  MemoryCgroup& operator=(const MemoryCgroup&) = delete;

  std::string procs() const { return dir_ + "/cgroup.procs"; }

 private:
  explicit MemoryCgroup(std::string dir) : dir_(std::move(dir)) {}
  std::string dir_;
};

}  // namespace hvd::testing

#endif  // HVD_TEST_SUPPORT_MEMORY_CGROUP_H_
