#include "launcher/elastic/elastic_summary.h"

#include <cstdio>

namespace hvd::launcher {
namespace {

std::string Number(double seconds) {
  char buf[32];
  std::snprintf(buf, sizeof(buf), "%g", seconds);
  return buf;
}

std::string Processes(int n) { return std::to_string(n) + (n == 1 ? " process" : " processes"); }

std::string HostsLine(const LaunchSpec& spec) {
  if (!spec.host_discovery_script.empty()) {
    return "discovery script '" + spec.host_discovery_script + "', run every " +
           Number(spec.discovery_interval_s) + " s (killed after " +
           Number(spec.discovery_timeout_s) + " s); a line without ':N' gives " +
           std::to_string(spec.slots_per_host.value_or(1)) + " slot(s) (--slots-per-host)";
  }
  std::string source = !spec.hosts.empty()      ? spec.hosts + " (-H)"
                       : !spec.hostfile.empty() ? "hostfile " + spec.hostfile
                                                : "the allocation (or localhost)";
  return "fixed: " + source + "; no host is added, failed ones are dropped";
}

}  // namespace

std::string DescribeElastic(const LaunchSpec& spec) {
  if (!spec.elastic()) return "";
  std::string text = "elastic job (hvdrun's elastic driver):\n";
  text += "  start:        once " +
          (spec.num_proc ? Processes(*spec.num_proc) + " (-np) fit" : "the hosts are known") +
          ", on every available slot up to the maximum\n";
  if (spec.min_num_proc) {
    text += "  minimum:      " + Processes(*spec.min_num_proc) + " (--min-np); fewer for " +
            Number(spec.elastic_timeout_s) + " s (--elastic-timeout) ends the job\n";
  }
  text += "  maximum:      " +
          (spec.max_num_proc ? Processes(*spec.max_num_proc) + " (--max-np)" : "no limit") + "\n";
  text += "  hosts:        " + HostsLine(spec) + "\n";
  text += "  failed host:  its ranks are stopped and it is blacklisted " +
          (spec.blacklist_cooldown_range
               ? "for " + std::to_string(spec.blacklist_cooldown_range->first) + " to " +
                     std::to_string(spec.blacklist_cooldown_range->second) +
                     " s (--blacklist-cooldown-range), then used again while still listed"
               : std::string("for the rest of the job")) +
          "\n";
  text += "  reset limit:  " +
          (spec.reset_limit ? std::to_string(*spec.reset_limit) + " resets (--reset-limit)"
                            : std::string("none")) +
          "\n";
  text += "  workers get:  HVD_ELASTIC=1 (HOROVOD_ELASTIC=1) and HVD_ELASTIC_WORKER_ID\n";
  return text;
}

}  // namespace hvd::launcher
