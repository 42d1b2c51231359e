#ifndef HVD_CMD_KNOB_ENV_H_
#define HVD_CMD_KNOB_ENV_H_

#include <map>
#include <string>
#include <vector>

#include "cmd/knobs.h"

// Knob -> worker environment, with horovodrun's exact string forms
// (horovod/runner/common/util/config_parser.py::set_env_from_args): the fusion threshold in
// bytes, the cycle time as Python's str(float) ("20.0"), booleans as "1"/"0". Autotune
// variables are written only when autotune is enabled and the timeline's mark-cycles only
// with a timeline file, as Horovod does.
//
// Divergences, on purpose: a boolean given explicitly as false (--no-autotune, --stall-check,
// --no-mpi-threads-disable, YAML enabled: true) is written as "0" rather than left out, so an
// explicit choice beats a value inherited from hvdrun's environment; autotune's warm-up, steps,
// max-samples and noise are written only when given (Horovod writes its argparse defaults
// 3/10/20/0.8, which equal the runtime's defaults).
namespace hvd::cmd {

struct EnvAssignment {
  std::string var;  // canonical HVD_* name (or a non-hvd name such as NCCL_IB_DISABLE)
  std::string value;
  std::string source;  // "command line" or "config file <path>"
};

// The variables the knobs set, canonical names only, in registry-like order.
std::vector<EnvAssignment> KnobEnv(const Knobs& knobs);

// Writes each assignment under its canonical name and, where the registry has one, its
// HOROVOD_* alias.
void WriteBothNames(const std::vector<EnvAssignment>& assignments,
                    std::map<std::string, std::string>* env);

// Python's repr/str of a float: shortest round-trip digits, ".0" on integral values,
// exponent form below 1e-4 and from 1e16 ("1e-05", "1e+16"), "inf", "nan".
std::string FormatPythonFloat(double value);

}  // namespace hvd::cmd

#endif  // HVD_CMD_KNOB_ENV_H_
