#include "test/support/temp_file.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdio>
#include <fstream>

namespace hvd::testing {
namespace {

std::string TempPath(std::string_view name) {
  return ::testing::TempDir() + "hvd_test_" + std::to_string(::getpid()) + "_" + std::string(name);
}

}  // namespace

TempFile::TempFile(std::string_view name, std::string_view content) : path_(TempPath(name)) {
  std::ofstream out(path_, std::ios::binary);
  out << content;
}

TempFile::~TempFile() { std::remove(path_.c_str()); }

std::string MissingPath() { return TempPath("missing"); }

}  // namespace hvd::testing
