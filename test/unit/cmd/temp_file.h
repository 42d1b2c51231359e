#ifndef HVD_TEST_UNIT_CMD_TEMP_FILE_H_
#define HVD_TEST_UNIT_CMD_TEMP_FILE_H_

#include <string>
#include <string_view>

namespace hvd::cmd::testing {

// A file under gtest's temp dir holding `content`, removed when the object dies.
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

}  // namespace hvd::cmd::testing

#endif  // HVD_TEST_UNIT_CMD_TEMP_FILE_H_
