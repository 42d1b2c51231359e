// Helpers for raw file descriptors.
#ifndef HVD_COMMON_FD_H_
#define HVD_COMMON_FD_H_

#include <unistd.h>

namespace hvd {

// Closes `*fd` when it is open, and marks it closed (-1).
inline void CloseFd(int* fd) {
  if (*fd >= 0) ::close(*fd);
  *fd = -1;
}

// Closes `fd` at the end of its scope.
struct FdCloser {
  int fd;
  ~FdCloser() {
    if (fd >= 0) ::close(fd);
  }
};

}  // namespace hvd

#endif  // HVD_COMMON_FD_H_
