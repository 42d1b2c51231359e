#ifndef HVD_TEST_FUZZ_FUZZ_TARGET_H_
#define HVD_TEST_FUZZ_FUZZ_TARGET_H_

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

// The fuzz targets: one per decoder of bytes that others control. Each entry runs one input
// through the production function(s) exactly as hvd calls them and returns what they made of
// it: "" when everything was accepted, else the errors, one per line. An error is the decoder
// doing its job; a crash, a sanitizer report, a failed HVD_CHECK (the entries check
// round-trip invariants with it), a leak, a hang or a huge allocation is a finding.
//
// The same entries run under libFuzzer (libfuzzer_entry.cc, clang, HVD_FUZZ=ON) and in the
// normal test suite over the committed corpus and regressions (fuzz_corpus_test.cc), so a
// finding, once fixed, stays fixed in every build. docs/fuzzing.md.
namespace hvd::fuzz {

using Entry = std::string (*)(std::string_view input);

std::string FuzzFrame(std::string_view input);
std::string FuzzHmac(std::string_view input);
std::string FuzzKvMessages(std::string_view input);
std::string FuzzElasticMessages(std::string_view input);
std::string FuzzHostSpec(std::string_view input);
std::string FuzzHostfile(std::string_view input);
std::string FuzzSlurm(std::string_view input);
std::string FuzzLsf(std::string_view input);
std::string FuzzDiscoveryOutput(std::string_view input);
std::string FuzzConfigFile(std::string_view input);
std::string FuzzTimeline(std::string_view input);
std::string FuzzAgentProtocol(std::string_view input);
std::string FuzzRendezvousConnection(std::string_view input);
std::string FuzzKernelLog(std::string_view input);
std::string FuzzStackRequest(std::string_view input);
std::string FuzzAutotuneCache(std::string_view input);
std::string FuzzTcpHandshake(std::string_view input);
std::string FuzzNegotiation(std::string_view input);
std::string FuzzTimelineShipment(std::string_view input);
std::string FuzzEnvironment(std::string_view input);
std::string FuzzCommandLine(std::string_view input);
std::string FuzzRankMessages(std::string_view input);
std::string FuzzKnownHosts(std::string_view input);
std::string FuzzShellSplit(std::string_view input);
std::string FuzzRankSetup(std::string_view input);
std::string FuzzLauncherTopology(std::string_view input);
std::string FuzzPreflightAnswers(std::string_view input);

struct Target {
  const char* name;  // the folder name under corpus/, regressions/ and dict/
  Entry run;
};

// Every target, in the order scripts/fuzz.sh runs them.
inline constexpr Target kTargets[] = {
    {"frame", FuzzFrame},
    {"hmac", FuzzHmac},
    {"kv_messages", FuzzKvMessages},
    {"elastic_messages", FuzzElasticMessages},
    {"host_spec", FuzzHostSpec},
    {"hostfile", FuzzHostfile},
    {"slurm", FuzzSlurm},
    {"lsf", FuzzLsf},
    {"discovery_output", FuzzDiscoveryOutput},
    {"config_file", FuzzConfigFile},
    {"timeline", FuzzTimeline},
    {"agent_protocol", FuzzAgentProtocol},
    {"rendezvous_connection", FuzzRendezvousConnection},
    {"kernel_log", FuzzKernelLog},
    {"stack_request", FuzzStackRequest},
    {"autotune_cache", FuzzAutotuneCache},
    {"tcp_handshake", FuzzTcpHandshake},
    {"negotiation", FuzzNegotiation},
    {"timeline_shipment", FuzzTimelineShipment},
    {"environment", FuzzEnvironment},
    {"command_line", FuzzCommandLine},
    {"rank_messages", FuzzRankMessages},
    {"known_hosts", FuzzKnownHosts},
    {"shell_split", FuzzShellSplit},
    {"rank_setup", FuzzRankSetup},
    {"launcher_topology", FuzzLauncherTopology},
    {"preflight_answers", FuzzPreflightAnswers},
};

}  // namespace hvd::fuzz

#endif  // HVD_TEST_FUZZ_FUZZ_TARGET_H_
