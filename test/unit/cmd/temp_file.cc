#include "test/unit/cmd/temp_file.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdio>
#include <fstream>

namespace hvd::cmd::testing {

TempFile::TempFile(std::string_view name, std::string_view content)
    : path_(::testing::TempDir() + "hvd_cmd_" + std::to_string(::getpid()) + "_" +
            std::string(name)) {
  std::ofstream out(path_, std::ios::binary);
  out << content;
}

TempFile::~TempFile() { std::remove(path_.c_str()); }

}  // namespace hvd::cmd::testing
