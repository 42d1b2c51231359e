#ifndef HVD_LAUNCHER_LOCAL_HINT_CONTEXT_H_
#define HVD_LAUNCHER_LOCAL_HINT_CONTEXT_H_

#include <map>
#include <string>

#include "launcher/outcome/failure_hints.h"

namespace hvd::launcher {

// What the failure hints (launcher/outcome/failure_hints.h) need to know about this machine
// for a job whose command starts with `program`: where PATH in `env` (hvdrun's environment)
// finds it, whether that is Debian's /usr/bin/python3, the hvd Python package beside this
// hvdrun, which modules /usr/bin/python3 has (/usr/lib/python3/dist-packages), and the
// MASTER_PORT exported in `env`.
HintContext LocalHintContext(const std::string& program,
                             const std::map<std::string, std::string>& env);

}  // namespace hvd::launcher

#endif  // HVD_LAUNCHER_LOCAL_HINT_CONTEXT_H_
