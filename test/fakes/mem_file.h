#ifndef HVD_TEST_FAKES_MEM_FILE_H_
#define HVD_TEST_FAKES_MEM_FILE_H_

#include <sys/mman.h>
#include <sys/types.h>
#include <unistd.h>

#include <string>

namespace hvd::launcher {

// An in-memory file (memfd) standing in for hvdrun's stdout or stderr in the launcher's tests.
class MemFile {
 public:
  MemFile() : fd_(memfd_create("hvd_test_output", MFD_CLOEXEC)) {}
  ~MemFile() { close(fd_); }
  MemFile(const MemFile&) = delete;
  MemFile& operator=(const MemFile&) = delete;

  int fd() const { return fd_; }
  // Everything written so far.
  std::string Contents() const {
    std::string out;
    char buf[4096];
    off_t offset = 0;
    ssize_t n;
    while ((n = pread(fd_, buf, sizeof(buf), offset)) > 0) {
      out.append(buf, static_cast<size_t>(n));
      offset += n;
    }
    return out;
  }

 private:
  int fd_;
};

}  // namespace hvd::launcher

#endif  // HVD_TEST_FAKES_MEM_FILE_H_
