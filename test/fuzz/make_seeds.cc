// hvd_fuzz_seeds CORPUS_DIR: writes the seed corpus of every target into CORPUS_DIR/<target>/
// (test/fuzz/corpus/ in the repository), from the protocols' own encoders (frames tagged under
// fuzz_keys.h's fixed test key, so they verify) and from the inputs of the unit tests. Run it
// again after a protocol change; docs/fuzzing.md.
#include <chrono>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <initializer_list>
#include <string>
#include <vector>

#include "autotune/autotune_cache.h"
#include "autotune/params.h"
#include "common/byte_codec.h"
#include "common/check.h"
#include "common/elastic_messages.h"
#include "common/env_registry.h"
#include "common/kv_messages.h"
#include "launcher/agents/agent_protocol.h"
#include "runtime/core/negotiation/coordinator.h"
#include "runtime/core/negotiation/fusion_planner.h"
#include "runtime/core/negotiation/message.h"
#include "runtime/core/negotiation/start_agreement.h"
#include "runtime/transports/gpu_path.h"
#include "runtime/transports/tcp/tcp_handshake.h"
#include "test/fuzz/fuzz_keys.h"
#include "timeline/clock_reply.h"
#include "timeline/timeline_event.h"
#include "timeline/trace_record.h"

namespace hvd::fuzz {
namespace {

namespace fs = std::filesystem;
using control::FrameType;
using control::KvRequest;

class Corpus {
 public:
  explicit Corpus(fs::path root) : root_(std::move(root)) {}
  void Write(const std::string& target, const std::string& name, const std::string& bytes) {
    fs::create_directories(root_ / target);
    std::ofstream(root_ / target / ("seed-" + name), std::ios::binary) << bytes;
    ++count_;
  }
  int count() const { return count_; }

 private:
  fs::path root_;
  int count_ = 0;
};

std::string Mode(uint8_t mode, const std::string& bytes) {
  return std::string(1, static_cast<char>(mode)) + bytes;
}

std::vector<KvRequest> Requests() {
  return {{FrameType::kSet, "rank/0/addr", "10.0.0.1:4000", 0, 0},
          {FrameType::kGet, "rank/0/addr", "", 0, 0},
          {FrameType::kWait, "rank/1/addr", "", 0, 100},
          {FrameType::kAdd, "counter", "", 3, 0},
          {FrameType::kDelete, "rank/0/addr", "", 0, 0},
          {FrameType::kFinishScope, "1/", "", 2, 0},
          {FrameType::kSet, "elastic/ready/0", "1 1", 0, 0},
          {FrameType::kGet, "aborted/x", "", 0, 0}};
}

std::string HelloFrame() {
  control::Hello hello{FuzzClientNonce(), std::string(kFuzzJobId)};
  return control::EncodeFrame(control::HelloKey(FuzzJobKey()), FrameType::kHello, 0,
                              control::EncodeHello(hello));
}

void FrameSeeds(Corpus& c) {
  const control::SessionKeys keys = FuzzSessionKeys();
  c.Write("frame", "hello", Mode(1, HelloFrame()));
  c.Write("frame", "hello-resigned", Mode(3, HelloFrame()));
  c.Write("frame", "server-hello",
          Mode(0, control::EncodeFrame(keys.server_to_client, FrameType::kServerHello, 0,
                                       control::EncodeServerHello(FuzzServerNonce()))));
  c.Write("frame", "reject", Mode(1, control::EncodeReject("hello is not signed")));
  int i = 0;
  for (const KvRequest& request : Requests()) {
    c.Write("frame", "request-" + std::to_string(i++),
            Mode(4, control::EncodeFrame(keys.client_to_server, request.op, 2,
                                         control::EncodeKvRequest(request))));
  }
  c.Write("frame", "response",
          Mode(2, control::EncodeFrame(keys.server_to_client, FrameType::kResponse, 2,
                                       control::EncodeKvResponse({StatusCode::kOk, "", "v", 7}))));
  c.Write("frame", "huge-length",
          Mode(0, control::EncodeHeader({FrameType::kSet, 0, 0xffffffffu, 2})));
}

void KvSeeds(Corpus& c) {
  int i = 0;
  for (const KvRequest& request : Requests()) {
    c.Write("kv_messages", "request-" + std::to_string(i++),
            Mode(static_cast<uint8_t>(request.op), control::EncodeKvRequest(request)));
  }
  c.Write("kv_messages", "response-ok",
          Mode(32, control::EncodeKvResponse({StatusCode::kOk, "", "value", 42})));
  c.Write(
      "kv_messages", "response-timeout",
      Mode(32, control::EncodeKvResponse({StatusCode::kTimeout, "key 'k' was not set", "", 0})));
  control::ByteWriter huge;
  huge.PutU32(0xffffffffu);
  c.Write("kv_messages", "huge-length", Mode(16, huge.Take()));
}

void ElasticSeeds(Corpus& c) {
  namespace e = control::elastic;
  e::Message assign;
  assign.assignment = {3, 1, 4, 1, 2, 0, 2, true, 1700000000, "node-1"};
  c.Write("elastic_messages", "assign", e::EncodeMessage(assign));
  c.Write("elastic_messages", "removed", e::EncodeMessage({true, {}, "host node-2 failed"}));
  c.Write("elastic_messages", "ready", e::EncodeReady({5, 2, 0}));
  c.Write("elastic_messages", "ready-unsynced", e::EncodeReady({1, 0, 0}));
  c.Write("elastic_messages", "ready-failed-round", e::EncodeReady({4, 0, 3}));
  c.Write("elastic_messages", "hosts", e::EncodeHostUpdate(1700000000, e::kHostsAdded));
}

void HmacSeeds(Corpus& c) {
  const control::JobKey key = FuzzJobKey();
  std::string bytes(1, static_cast<char>(key.size()));
  bytes.append(reinterpret_cast<const char*>(key.data()), key.size());
  c.Write("hmac", "job-key", bytes + "hvd-v1 hello");
  c.Write("hmac", "empty-key", std::string(1, '\0') + "message");
}

void AgentSeeds(Corpus& c) {
  namespace l = hvd::launcher;
  l::AgentHello hello;
  hello.job_key = FuzzJobKey();
  hello.heartbeat_timeout_s = 10;
  hello.cwd = "/home/user";
  l::AgentStart start{0, {"python3", "train.py"}, {{"HVD_RANK", "0"}, {"PATH", "/usr/bin"}}};
  const std::string to_agent = l::EncodeHello(hello) + l::EncodeStart(start) +
                               l::EncodeSignal(0, 15) + l::EncodeStop(0) +
                               l::EncodeLauncherHeartbeat();
  c.Write("agent_protocol", "to-agent", Mode(0xfe, to_agent));
  c.Write("agent_protocol", "to-agent-bytewise", Mode(0, to_agent));
  std::string from_agent =
      l::EncodeReady({l::kAgentProtocolVersion, "node-1", 4242}) + l::EncodeStarted(0, 4243);
  l::AppendOutput(0, 1, "[0]<stdout>:hello\n", &from_agent);
  from_agent += l::EncodeExit(0, 0) +
                l::EncodeExit(1, 9,
                              "killed by the kernel's OOM killer (Memory cgroup out of memory; "
                              "python3, anon-rss 65152 kB)") +
                l::EncodeAgentHeartbeat();
  c.Write("agent_protocol", "from-agent", Mode(0xff, from_agent));
  c.Write("agent_protocol", "from-agent-pieces", Mode(0x0d, from_agent));
  c.Write("agent_protocol", "huge-length", Mode(0xfe, std::string(4, '\xff')));
}

void RendezvousSeeds(Corpus& c) {
  const control::SessionKeys keys = FuzzSessionKeys();
  control::FrameChannel client(keys.client_to_server, keys.server_to_client, 1, 1,
                               control::kDefaultMaxFrameBytes);
  std::string stream = HelloFrame() + client.Seal(FrameType::kAuth, "");
  c.Write("rendezvous_connection", "handshake", Mode(0, stream));
  std::string script;
  for (const KvRequest& request : Requests()) {
    const std::string body = control::EncodeKvRequest(request);
    stream += client.Seal(request.op, body);
    script += static_cast<char>(request.op);
    script += static_cast<char>(body.size() >> 8);
    script += static_cast<char>(body.size());
    script += body;
  }
  c.Write("rendezvous_connection", "requests", Mode(0, stream));
  c.Write("rendezvous_connection", "requests-any-job", Mode(2, stream));
  c.Write("rendezvous_connection", "script", Mode(1, script));
  // The first request again, unsealed: a replay on the same connection.
  const std::string first = control::EncodeKvRequest(Requests()[0]);
  control::FrameChannel replayer(keys.client_to_server, keys.server_to_client, 2, 2,
                                 control::kDefaultMaxFrameBytes);
  const std::string replay = replayer.Seal(FrameType::kSet, first);
  c.Write("rendezvous_connection", "replay",
          Mode(1, script +
                      std::string{'\x80', static_cast<char>(replay.size() >> 8),
                                  static_cast<char>(replay.size())} +
                      replay));
}

void TextSeeds(Corpus& c) {
  using std::string_literals::operator""s;
  const std::vector<std::pair<std::string, std::vector<std::string>>> texts = {
      {"host_spec",
       {"a:2,b:1", " a:2 , b:1 ", "10.0.0.1:8,10.0.0.2:8", "[fe80::1%eth0]:2,[::1]", "a,b:3",
        "a:1,a:2", "good:2,bad:0"}},
      {"hostfile",
       {"# hosts\nnode1 slots=4\nnode2 slots=4 max_slots=8\nnode3\n",
        "fe80::1 slots=2\r\n[::1] max-slots=3 slots=1  # note\n", "node1 slots=0\n"}},
      {"slurm",
       {"node[01-04,07],gpu-[1-2]a,x\0002(x3),1,1,1\00010"s, "r[1-2]n[1-2]\0001(x4)"s, "node[1-3",
        "n[5-1]"}},
      {"lsf",
       {"\0hostA 4 hostB 4"s, "\1hostA hostA hostB", "\2hostA\nhostA\n\nhostB\n", "\0hostA x"s}},
      {"kernel_log",
       {"\1\x47\xba\0Memory cgroup out of memory: Killed process 18362 (python3) "
        "total-vm:278712kB, anon-rss:65152kB, file-rss:6656kB, shmem-rss:0kB, UID:0 "
        "pgtables:184kB oom_score_adj:0\nhvd-br0: port 1(hvd-v1) entered forwarding state"s,
        "\2\0\x4d\0Out of memory: Kill process 77 (python3) score 912 or sacrifice child\n"
        "Killed process 77 (python3) total-vm:100kB, anon-rss:64kB, file-rss:0kB\n"
        "oom_reaper: reaped process 77 (python3), now anon-rss:0kB"s,
        "\1\0\x09\1Out of memory: Killed process 9 (a (b) c) total-vm:1kB, anon-rss:2kB"s}},
      {"stack_request",
       {"\0"
        "1,3"s,
        "\0"
        "0"s,
        "\0"
        "1,,2"s,
        "\1"
        "4242 (python3) S 4000 4100 4100 0 -1 4194560 1 0 0 0"s,
        "\1"
        "7 (a) S 1 1 (b) R 99 98 97 0) S 5 6 0"s,
        "\2\x2c"
        "Name:\tpython3\nSigIgn:\t0000000001001000\nSigCgt:\t0000080000004002\n"s}},
      {"discovery_output",
       {"\0host-1:4\nhost-2:4\n"s, "\2host-1\r\nhost-2:2\n\n",
        "\0[fe80::1]:2\nhost-1:2\nhost-1:3\n"s}},
      {"config_file",
       {"params:\n  fusion_threshold_mb: 64\n  cycle_time_ms: 1.0\n  cache_capacity: 1024\n"
        "autotune:\n  enabled: false\n  log_file: autotune.csv\n  warmup_samples: 3\n"
        "timeline:\n  mark_cycles: false\nstall_check:\n  enabled: true\n"
        "  warning_time_seconds: 60\nlibrary_options:\n  gloo_timeout_seconds: 30\n"
        "logging:\n  level: WARNING\n  with_timestamp: true\n",
        "controller: gloo\nparams: {fusion_threshold_mb: x}\n", "- a\n- b\n",
        "a: &x [1, 2]\nb: *x\n"}}};
  for (const auto& [target, inputs] : texts) {
    for (size_t i = 0; i < inputs.size(); ++i) c.Write(target, std::to_string(i), inputs[i]);
  }
}

void TimelineSeeds(Corpus& c) {
  std::string events;
  events += timeline::ToJson({'M', "process_name", 0, 0, 0, {{"name", std::string("rank 0")}}});
  events += ",\n" + timeline::ToJson({'B', "NEGOTIATE_ALLREDUCE", 0, 1, 10, {}});
  events += ",\n" + timeline::ToJson({'E', "NEGOTIATE_ALLREDUCE", 0, 1, 20, {}});
  events += ",\n" + timeline::ToJson({'B', "ALLREDUCE", 0, 1, 20, {}});
  events += ",\n" + timeline::ToJson({'B', "MEMCPY_IN_FUSION_BUFFER", 0, 1, 21, {}});
  events += ",\n" + timeline::ToJson({'E', "MEMCPY_IN_FUSION_BUFFER", 0, 1, 22, {}});
  events += ",\n" + timeline::ToJson({'E', "ALLREDUCE", 0, 1, 40, {{"bytes", int64_t{4096}}}});
  events +=
      ",\n" + timeline::ToJson({'X', "QUEUE", 0, 2, 5, {{"op", std::string("ALLREDUCE")}}, 15});
  const std::string complete = "[\n" + events + "\n]\n";
  c.Write("timeline", "complete", complete);
  c.Write("timeline", "trace-events", "{\"traceEvents\": " + complete + "}");
  c.Write("timeline", "torn", "[\n" + events + "\n]\n" + std::string(64, ' ') + "\n]\n");
  c.Write("timeline", "unclosed", "[\n" + events + ",\n");
  c.Write("timeline", "truncated", complete.substr(0, complete.size() / 2));
}

// A cache as a tuning job stores it, with two models, and one with an entry of another shape.
void AutotuneCacheSeeds(Corpus& c) {
  autotune::CachedParams tuned;
  tuned.params.cycle_time_ms = 3.5;
  tuned.params.fusion_threshold_mb = 24;
  tuned.params.hierarchical_allreduce = true;
  tuned.score = 2.5e9;
  Result<std::string> one = autotune::MergeCachedParams("", "seed.json", "0123456789abcdef", tuned);
  HVD_CHECK(one.ok());
  tuned.params.cache_enabled = false;
  Result<std::string> two =
      autotune::MergeCachedParams(*one, "seed.json", "fedcba9876543210", tuned);
  HVD_CHECK(two.ok());
  c.Write("autotune_cache", "one", "0123456789abcdef\n" + *one);
  c.Write("autotune_cache", "two", "fedcba9876543210\n" + *two);
  c.Write("autotune_cache", "other-shape",
          "abcd\n{\"format\": \"hvd-autotune-cache\", \"version\": 1, \"entries\": "
          "{\"abcd\": {\"cycle_time_ms\": [1, {\"x\": null}], \"score\": -1e-3}}}");
}

// The handshake as ranks 3 and 1 of 4 run it: the hello, then the right proof; the same,
// re-signed by the target; a stray HTTP request; and, for the connector, the acceptor's reply.
void TcpHandshakeSeeds(Corpus& c) {
  const runtime::HandshakeContext ctx{FuzzJobKey(), std::string(kFuzzJobId), "global"};
  const runtime::Hello hello{3, 1, 4, FuzzClientNonce()};
  const auto hello_bytes = runtime::EncodeHello(hello);
  const std::string hello_text(hello_bytes.begin(), hello_bytes.end());
  const control::MacTag proof = runtime::ConnectorTag(ctx, hello, FuzzServerNonce());
  // After the mode byte: size byte 3 makes 4 ranks, rank byte 1 makes rank 1.
  c.Write("tcp_handshake", "accept",
          std::string("\0\3\1", 3) + hello_text + std::string(proof.begin(), proof.end()));
  c.Write("tcp_handshake", "accept-resigned", std::string("\2\3\1", 3) + hello_text);
  c.Write("tcp_handshake", "accept-flipped", std::string("\6\3\1", 3) + hello_text + "\x11");
  c.Write("tcp_handshake", "stray",
          std::string("\0\3\1", 3) + "GET / HTTP/1.1\r\nHost: x\r\n\r\n" + std::string(32, 'A'));
  const control::MacTag tag = runtime::AcceptorTag(ctx, hello, FuzzServerNonce());
  const control::Nonce nonce_a = FuzzServerNonce();
  std::string fields(12, '\0');
  std::memcpy(fields.data(), &hello.from, 4);
  std::memcpy(fields.data() + 4, &hello.to, 4);
  std::memcpy(fields.data() + 8, &hello.size, 4);
  c.Write("tcp_handshake", "connect",
          std::string("\1\3\1", 3) + fields + std::string(nonce_a.begin(), nonce_a.end()) +
              std::string(tag.begin(), tag.end()));
  c.Write("tcp_handshake", "connect-resigned",
          std::string("\3\3\1", 3) + fields + std::string(64, '\x5a'));
}

// One rank's request list as a record of the negotiation target: the sending rank (bit 7:
// take what is ready after it), the list's length and the list.
std::string NegotiationRecord(int rank, bool take, const runtime::RequestList& list) {
  const std::string bytes = runtime::EncodeRequestList(list);
  std::string out(1, static_cast<char>(rank | (take ? 0x80 : 0)));
  out.push_back(static_cast<char>(bytes.size() & 0xff));
  out.push_back(static_cast<char>(bytes.size() >> 8));
  return out + bytes;
}

runtime::Request NegotiationRequest(runtime::OpType type, const std::string& name,
                                    std::vector<int64_t> shape) {
  runtime::Request r;
  r.type = type;
  r.name = name;
  r.shape = std::move(shape);
  return r;
}

// A cycle of 2 ranks per op kind (size byte 1, fusion 2^20 bytes), each rank's list as it
// sends it; and the response lists rank 0 makes of them, for the member's side.
void NegotiationSeeds(Corpus& c) {
  using runtime::OpType;
  using runtime::Request;
  using runtime::RequestList;
  auto cycle = [](std::vector<Request> rank0, std::vector<Request> rank1) {
    std::string out("\0\1\x14", 3);
    out += NegotiationRecord(0, false, RequestList{rank0, false, {}});
    out += NegotiationRecord(1, true, RequestList{rank1, false, {}});
    return out;
  };
  auto same = [&](std::vector<Request> both) { return cycle(both, both); };
  const Request a = NegotiationRequest(OpType::kAllreduce, "grad.a", {17, 17, 17});
  const Request b = NegotiationRequest(OpType::kAllreduce, "grad.b", {3});
  c.Write("negotiation", "allreduce-fused", same({a, b}));
  Request avg = a;
  avg.reduce_op = runtime::ReduceOp::kAverage;
  avg.prescale = 0.5;
  avg.postscale = 2.0;
  avg.device = 0;
  c.Write("negotiation", "allreduce-scaled", same({avg}));
  c.Write("negotiation", "allgather-uneven",
          cycle({NegotiationRequest(OpType::kAllgather, "g", {2, 5})},
                {NegotiationRequest(OpType::kAllgather, "g", {7, 5})}));
  Request bcast = NegotiationRequest(OpType::kBroadcast, "params", {10});
  bcast.root = 1;
  c.Write("negotiation", "broadcast", same({bcast}));
  Request splits = NegotiationRequest(OpType::kAlltoall, "a2a", {4, 2});
  splits.args = {1, 3};
  c.Write("negotiation", "alltoall",
          same({NegotiationRequest(OpType::kAlltoall, "even", {4, 2}), splits}));
  c.Write("negotiation", "reducescatter",
          same({NegotiationRequest(OpType::kReducescatter, "rs", {5, 3})}));
  Request g1 = a, g2 = b;
  g1.group = g2.group = "group.0";
  g1.group_size = g2.group_size = 2;
  c.Write("negotiation", "grouped", same({g1, g2}));
  Request add = NegotiationRequest(OpType::kProcessSetAdd, "add_process_set", {});
  add.args = {0, 1};
  Request remove = NegotiationRequest(OpType::kProcessSetRemove, "remove_process_set", {});
  remove.args = {1};
  c.Write("negotiation", "process-sets", same({add, remove}));
  c.Write("negotiation", "join-then-allreduce",
          cycle({NegotiationRequest(OpType::kJoin, "join", {})}, {a}));
  c.Write("negotiation", "mismatched-shape",
          cycle({a}, {NegotiationRequest(OpType::kAllreduce, "grad.a", {4913})}));
  c.Write("negotiation", "shutdown",
          std::string("\0\1\0", 3) +
              NegotiationRecord(1, true, RequestList{{}, true, "process set 1 stalled"}));
  runtime::Coordinator coordinator(2);
  for (int rank = 0; rank < 2; ++rank) {
    for (Request r : {a, b, NegotiationRequest(OpType::kAllgather, "g", {2 + rank, 5})}) {
      r.rank = rank;
      coordinator.Add(r, std::chrono::steady_clock::now());
    }
  }
  runtime::ResponseList responses;
  responses.responses = runtime::PlanFusion(coordinator.TakeReady(), {});
  c.Write("negotiation", "responses", "\1\1" + runtime::EncodeResponseList(responses));
  responses.shutdown = true;
  responses.shutdown_reason = "rank 1 asked to shut down";
  responses.shutdown_ranks = {1};
  c.Write("negotiation", "responses-shutdown", "\1\1" + runtime::EncodeResponseList(responses));
}

// Rank 1's shipment as its timeline collects one allreduce (the sender byte 0 makes rank 1, an
// offset of -250 us, cycle marks on), then the same with a queue span and dropped events.
void TimelineShipmentSeeds(Corpus& c) {
  using timeline::EventType;
  using timeline::TimelineEvent;
  const int64_t t = 1700000000000100;
  std::vector<TimelineEvent> events = {
      {EventType::kNegotiateStart, 1, t, "grad.w", "ALLREDUCE", -1, "", "", -1, 0},
      {EventType::kNegotiateRankReady, 1, t + 5, "grad.w", "", 1, "", "", -1, 0},
      {EventType::kNegotiateEnd, 1, t + 9, "grad.w", "", -1, "", "", -1, 0},
      {EventType::kStart, 1, t + 10, "grad.w", "ALLREDUCE", -1, "", "", -1, 0},
      {EventType::kActivityStart, 1, t + 11, "grad.w", "SHM_ALLREDUCE", -1, "", "", -1, 0},
      {EventType::kActivityEnd, 1, t + 30, "grad.w", "", -1, "", "", -1, 0},
      {EventType::kEnd, 1, t + 31, "grad.w", "", -1, "float32", "[4, 4]", 64, 0},
  };
  const int64_t offset = -250;
  std::string head(1, '\0');
  head.append(reinterpret_cast<const char*>(&offset), sizeof(offset));
  head.push_back('\1');
  c.Write("timeline_shipment", "allreduce", head + timeline::EncodeShipment(0, events));
  events.push_back({EventType::kQueue, 1, t - 40, "grad\tb\n", "ALLGATHER", -1, "", "", -1, 40});
  events.push_back({EventType::kCycleStart, 1, t + 50, "", "", -1, "", "", -1, 0});
  c.Write("timeline_shipment", "queue-dropped", head + timeline::EncodeShipment(12, events));
}

// Variables as records of the environment target: the variable's index in AllVars() (bit 7:
// its Horovod alias), then the value and a newline.
std::string EnvironmentRecord(std::string_view name, const std::string& value) {
  const std::vector<env::VarSpec>& specs = env::AllVars();
  for (size_t i = 0; i < specs.size(); ++i) {
    const bool alias = name == specs[i].horovod_alias;
    if (name == specs[i].name || alias) {
      return std::string(1, static_cast<char>(i | (alias ? 0x80 : 0))) + value + "\n";
    }
  }
  HVD_CHECK(false) << "no variable " << name;
  return "";
}

void EnvironmentSeeds(Corpus& c) {
  c.Write("environment", "horovod-knobs",
          EnvironmentRecord("HOROVOD_FUSION_THRESHOLD", "67108864") +
              EnvironmentRecord("HOROVOD_CYCLE_TIME", "3.5") +
              EnvironmentRecord("HOROVOD_CACHE_CAPACITY", "2048") +
              EnvironmentRecord("HOROVOD_HIERARCHICAL_ALLREDUCE", "1") +
              EnvironmentRecord("HOROVOD_LOG_LEVEL", "debug"));
  c.Write("environment", "hvd-knobs",
          EnvironmentRecord("HVD_STALL_CHECK_TIME_SECONDS", "30") +
              EnvironmentRecord("HVD_CPU_OPERATIONS", "tcp") +
              EnvironmentRecord("HVD_TIMELINE", "/tmp/hvd-fuzz-timeline.json") +
              EnvironmentRecord("HVD_AUTOTUNE", "yes"));
  c.Write("environment", "malformed",
          EnvironmentRecord("HOROVOD_FUSION_THRESHOLD", "abc") +
              EnvironmentRecord("HOROVOD_CYCLE_TIME", "-1"));
}

// hvdrun command lines, a word per line: what users and job scripts type (docs/cli.md), and
// refusals of each kind.
void CommandLineSeeds(Corpus& c) {
  const auto words = [](std::initializer_list<const char*> list) {
    std::string out;
    for (const char* w : list) out += std::string(w) + "\n";
    return out;
  };
  c.Write("command_line", "local", words({"-np", "4", "python3", "train.py", "--epochs", "2"}));
  c.Write("command_line", "hosts",
          words({"-np", "16", "-H", "a:8,b:8", "--gloo", "--fusion-threshold-mb", "32",
                 "--cycle-time-ms", "3.5", "--timeline-filename", "/tmp/t.json",
                 "--timeline-all-ranks", "python3", "train.py"}));
  c.Write("command_line", "elastic",
          words({"-np", "4", "--min-np", "2", "--max-np", "8", "--host-discovery-script",
                 "./discover.sh", "--slots", "2", "--blacklist-cooldown-range", "10", "100",
                 "--reset-limit", "3", "python3", "train.py"}));
  c.Write("command_line", "equals",
          words({"--num-proc=2", "--hosts=localhost:2", "--autotune", "--autotune-log-file=a.csv",
                 "--log-level=DEBUG", "--output-filename=out", "--", "python3", "-c", "pass"}));
  c.Write("command_line", "mpi",
          words({"--mpi", "--mpi-args=--bind-to none", "-np", "2", "--bind-to", "core",
                 "--ssh-port", "2222", "python3", "x.py"}));
  c.Write("command_line", "check-build", words({"-cb"}));
  c.Write("command_line", "print-config", words({"--print-config", "--cycle-time-ms", "2"}));
  c.Write("command_line", "bad-np", words({"-np", "zero", "python3", "train.py"}));
  c.Write("command_line", "bad-value", words({"--fusion-threshold-mb", "-3", "-np", "2", "x"}));
  c.Write("command_line", "two-sources",
          words({"-H", "a:2", "--hostfile", "h", "--gloo", "--mpi", "-np", "2", "x"}));
  c.Write("command_line", "mistyped", words({"--fusion-treshold-mb", "4", "-n", "2", "x"}));
  c.Write("command_line", "no-command", words({"-np", "2"}));
}

// The ranks' autotune line and clock-sync replies, as the runtime writes them, and refusals.
void RankMessageSeeds(Corpus& c) {
  autotune::SyncLine line;
  line.changed = true;
  line.params.cycle_time_ms = 3.5;
  line.params.fusion_threshold_mb = 64;
  c.Write("rank_messages", "autotune-changed", autotune::EncodeSyncLine(line));
  line.done = true;
  line.params.cache_enabled = false;
  c.Write("rank_messages", "autotune-done", autotune::EncodeSyncLine(line));
  c.Write("rank_messages", "autotune-nan", "1 0 1 nan 64");
  c.Write("rank_messages", "clock-reply",
          timeline::EncodeClockReply(1764576000000000, 1764576000000003));
  c.Write("rank_messages", "clock-overflow", "9223372036854775807 -9223372036854775808");
}

// known_hosts files: plain, hashed and revoked lines.
void KnownHostsSeeds(Corpus& c) {
  c.Write("known_hosts", "plain-and-revoked",
          "hvd-h1,10.11.0.2 ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIHGgPQ root@h1\n"
          "@revoked hvd-h2 ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIHGgPQ old\n");
  c.Write("known_hosts", "hashed-and-ca",
          "|1|F1E1KeoE/eEWhi10WpGv4OdiO6Y=|3988QV0VE8wmZL7suNrYQLITLCg= ssh-rsa AAAAB3Nza\n"
          "@cert-authority *.example ssh-ed25519 AAAA\n@revoked\t*\tssh-rsa\taGk=\r\n");
}

// --mpi-args / --binding-args values.
void ShellSplitSeeds(Corpus& c) {
  c.Write("shell_split", "mca", "-mca btl_tcp_if_include eth0 --bind-to none");
  c.Write("shell_split", "quotes", "-x 'A=b c' \"D=$E\\\"\" f\\ g");
  c.Write("shell_split", "unbalanced", "-x 'A=b");
}

// What ranks tell each other while they set up (rank_setup: the mode byte, then its input).
void RankSetupSeeds(Corpus& c) {
  using namespace std::string_literals;
  const runtime::StartKnob knobs[] = {{"A", 64}, {"B", -1}};
  const std::string sets = "[[0, 1]]";
  // Rank 0's local size 2, two knobs (int8 values, no 2^40 factor), its sets, then the lines.
  const std::string own = "\x02\x02\x40\x00\xff\x00"s + sets + "\n";
  c.Write("rank_setup", "start-agree", Mode(0, own + runtime::EncodeStartLine(2, knobs, sets)));
  c.Write("rank_setup", "start-differ", Mode(0, own + "2 64 7 [[0, 1]]\n1 64 -1 [[0, 1]]"));
  c.Write("rank_setup", "start-malformed", Mode(0, own + "2 064 -1 [[0, 1]]\n+2 64"));
  c.Write("rank_setup", "gpu-own",
          Mode(1, "auto\nNCCL_HOSTID=a\n0000:01:00.0\nscale-kernel\0"s +
                      "auto\nNCCL_HOSTID=b\n0000:01:00.0\nscale-kernel"));
  c.Write("rank_setup", "gpu-shared",
          Mode(1, "nccl\nh\n0000:01:00.0\0nccl\nh\n0000:01:00.0\0cpu\nh"s));
  c.Write("rank_setup", "decision-nccl",
          Mode(2, "N-" + std::string(runtime::kNcclUniqueIdBytes, '\x02')));
  c.Write("rank_setup", "decision-error", Mode(2, "EHVD_GPU_OPERATIONS differs"));
  c.Write("rank_setup", "address",
          Mode(3, runtime::EncodePeerAddress("10.0.0.2", 41234, "node 2")));
  c.Write("rank_setup", "address-v6", Mode(3, "fd00::2 65535 h"));
  c.Write("rank_setup", "address-bad", Mode(3, "10.0.0.2 041234  node2"));
}

// Another launcher's or Slurm's variables (launcher_topology: PATH's byte, then records of a
// variable's index in the target's list and its value).
void LauncherTopologySeeds(Corpus& c) {
  using namespace std::string_literals;
  c.Write("launcher_topology", "ompi",
          "\x01\x00"
          "1\n\x01"
          "4\n\x02"
          "1\n\x03"
          "2\n"s);
  c.Write("launcher_topology", "pmi",
          "\x01\x04"
          "3\n\x05"
          "4\n\x06"
          "1\n\x07"
          "2\n"s);
  c.Write("launcher_topology", "hvd",
          "\x00\x08"
          "0\n\x09"
          "2\n\x0a"
          "0\n\x0b"
          "2\n\x0e"
          "n1\n"s);
  c.Write("launcher_topology", "bad",
          "\x01\x00"
          "-1\n\x01"
          "4x\n\x02"
          "9\n"s);
  c.Write("launcher_topology", "slurm",
          "\x01\x0f"
          "42\n\x11"
          "node[1-2],gpu7\n"s);
  c.Write("launcher_topology", "slurm-bad-id",
          "\x01\x10"
          "42 --uid=0\n\x12"
          "n[1-\n"s);
}

// What a remote host prints back to hvdrun --check (preflight_answers: pieces, each a length
// byte and its bytes; a length of 0 repeats the last piece).
void PreflightAnswerSeeds(Corpus& c) {
  auto piece = [](const std::string& bytes) {
    return std::string(1, static_cast<char>(bytes.size())) + bytes;
  };
  c.Write("preflight_answers", "version", piece("Welcome to h1\r\n") + piece("hvd-agent 0.1.0\n"));
  c.Write("preflight_answers", "probe",
          piece("interface ok eth0 10.0.0.2\n") + piece("reach error: connection refused\r\n"));
  c.Write("preflight_answers", "endless", piece("yes\n") + std::string(3, '\0'));
  c.Write("preflight_answers", "control", piece("interface \x1b]0;owned\x07\n"));
}

}  // namespace
}  // namespace hvd::fuzz

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: %s CORPUS_DIR\n", argv[0]);
    return 2;
  }
  hvd::fuzz::Corpus corpus(argv[1]);
  hvd::fuzz::FrameSeeds(corpus);
  hvd::fuzz::KvSeeds(corpus);
  hvd::fuzz::ElasticSeeds(corpus);
  hvd::fuzz::HmacSeeds(corpus);
  hvd::fuzz::AgentSeeds(corpus);
  hvd::fuzz::RendezvousSeeds(corpus);
  hvd::fuzz::TextSeeds(corpus);
  hvd::fuzz::TimelineSeeds(corpus);
  hvd::fuzz::AutotuneCacheSeeds(corpus);
  hvd::fuzz::TcpHandshakeSeeds(corpus);
  hvd::fuzz::NegotiationSeeds(corpus);
  hvd::fuzz::TimelineShipmentSeeds(corpus);
  hvd::fuzz::EnvironmentSeeds(corpus);
  hvd::fuzz::CommandLineSeeds(corpus);
  hvd::fuzz::RankMessageSeeds(corpus);
  hvd::fuzz::KnownHostsSeeds(corpus);
  hvd::fuzz::ShellSplitSeeds(corpus);
  hvd::fuzz::RankSetupSeeds(corpus);
  hvd::fuzz::LauncherTopologySeeds(corpus);
  hvd::fuzz::PreflightAnswerSeeds(corpus);
  std::printf("wrote %d seeds under %s\n", corpus.count(), argv[1]);
  return 0;
}
