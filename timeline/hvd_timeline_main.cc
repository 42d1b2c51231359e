// hvd-timeline: inspects timelines written by the runtime. See timeline/timeline_tool.h.
#include <iostream>
#include <string>
#include <vector>

#include "timeline/timeline_tool.h"

int main(int argc, char** argv) {
  std::vector<std::string> args(argv + 1, argv + argc);
  return hvd::timeline::RunTimelineTool(args, std::cout, std::cerr);
}
