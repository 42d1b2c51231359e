#include "test/unit/discovery/temp_file.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdio>
#include <fstream>

namespace hvd::discovery::testing {

TempFile::TempFile(std::string_view name, std::string_view content)
    : path_(::testing::TempDir() + "hvd_discovery_" + std::to_string(::getpid()) + "_" +
            std::string(name)) {
  std::ofstream out(path_, std::ios::binary);
  out << content;
}

TempFile::~TempFile() { std::remove(path_.c_str()); }

std::string MissingPath() {
  return ::testing::TempDir() + "hvd_discovery_" + std::to_string(::getpid()) + "_missing";
}

}  // namespace hvd::discovery::testing
