#ifndef HVD_LAUNCHER_ELASTIC_ELASTIC_SUMMARY_H_
#define HVD_LAUNCHER_ELASTIC_ELASTIC_SUMMARY_H_

#include <string>

#include "launcher/plan/launch_spec.h"

namespace hvd::launcher {

// The elastic settings of `spec` in words, one per line ("  minimum: 2 processes (--min-np);
// ..."), for --dry-run, --verbose and --print-config. Empty when spec is not elastic. Pure.
std::string DescribeElastic(const LaunchSpec& spec);

}  // namespace hvd::launcher

#endif  // HVD_LAUNCHER_ELASTIC_ELASTIC_SUMMARY_H_
