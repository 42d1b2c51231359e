#ifndef HVD_TEST_SUPPORT_TEMP_FILE_H_
#define HVD_TEST_SUPPORT_TEMP_FILE_H_

#include <string>
#include <string_view>

namespace hvd::testing {

// A file under gtest's temp dir holding `content`, removed when the object dies. The name is
// made unique per process, so tests of different binaries may run in parallel.
class TempFile {
 public:
  TempFile(std::string_view name, std::string_view content);
  ~TempFile();
  TempFile(const TempFile&) = delete;
  TempFile& operator=(const TempFile&) = delete;

  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

// A path under gtest's temp dir that does not exist.
std::string MissingPath();

}  // namespace hvd::testing

#endif  // HVD_TEST_SUPPORT_TEMP_FILE_H_
