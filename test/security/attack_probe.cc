// hvd_attack_probe: attacks a live job's rendezvous server from inside the job's host, the way
// a local user who can reach the port (or sniff it) would, and checks that each attempt is
// refused and reaches nothing. Run as part of rank 0's command under the real hvdrun
// (test_security.py); reads the server's address and the job id from the rank's environment.
// The job key (HVD_SECRET_FD) is used only to make the legitimate connection whose bytes a
// sniffer would capture, and to check afterwards, as a member, what the attacks reached.
// Prints "probe: <attack>: refused: <why>" per attack; exits 1 naming any attack that got
// through, 2 on a usage error.
#include <cstdio>
#include <cstdlib>
#include <string>

#include "common/env_registry.h"
#include "common/frame.h"
#include "common/job_key.h"
#include "common/kv_messages.h"
#include "common/tcp_kv_client.h"

namespace hvd::control {
namespace {

using Clock = DeadlineSocket::Clock;
constexpr auto kTimeout = std::chrono::seconds(10);
constexpr char kReplayedKey[] = "security/replayed";

struct Target {
  std::string host;
  uint16_t port = 0;
  std::string job_id;
  JobKey key{};
};

int failures = 0;

void Refused(const char* attack, const std::string& why) {
  std::printf("probe: %s: refused: %s\n", attack, why.c_str());
}
void GotThrough(const char* attack, const std::string& what) {
  std::printf("probe: %s: GOT THROUGH: %s\n", attack, what.c_str());
  ++failures;
}

JobKey OtherKey() {
  Result<JobKey> key = GenerateJobKey();
  if (!key.ok()) std::exit(2);
  return *key;
}

// A client's connection attempt must end in PermissionDenied.
void ExpectDenied(const char* attack, const Target& t, const JobKey& key, const std::string& job) {
  auto client = TcpKvClient::Connect(t.host, t.port, key, job, kTimeout);
  if (client.ok()) {
    GotThrough(attack, "authenticated; its set returned " +
                           (*client)->Set("security/" + std::string(attack), "1").ToString());
  } else if (client.status().code() != StatusCode::kPermissionDenied) {
    GotThrough(attack, "expected permission denied, got " + client.status().ToString());
  } else {
    Refused(attack, client.status().message());
  }
}

// Sends `bytes` on a fresh connection; true when the server closed it without answering more
// than `answers` frames (it may answer a replayed hello: its tag is valid).
bool ClosedAfter(const Target& t, const std::string& bytes, int answers, std::string* why) {
  auto deadline = Clock::now() + kTimeout;
  Result<DeadlineSocket> socket = DeadlineSocket::Connect(t.host, t.port, deadline);
  if (!socket.ok()) {
    *why = socket.status().ToString();
    return false;
  }
  if (!socket->WriteAll(bytes, deadline).ok()) return true;  // closed while we wrote
  for (int i = 0; i <= answers; ++i) {
    std::string frame;
    Status read = ReadFrameBytes(*socket, kDefaultMaxFrameBytes, deadline, &frame);
    if (!read.ok()) {
      *why = read.code() == StatusCode::kTimeout ? "no answer and still open" : "closed";
      return read.code() != StatusCode::kTimeout;
    }
    if (i == answers) *why = "answered a frame it should have refused";
  }
  return false;
}

// A legitimate connection's bytes, as a sniffer captures them: hello, auth, set, delete.
std::string CaptureSession(const Target& t, std::string* set_frame) {
  auto deadline = Clock::now() + kTimeout;
  Result<DeadlineSocket> socket = DeadlineSocket::Connect(t.host, t.port, deadline);
  if (!socket.ok()) std::exit(2);
  Hello hello{NewNonce(), t.job_id};
  std::string sent = EncodeFrame(HelloKey(t.key), FrameType::kHello, 0, EncodeHello(hello));
  std::string reply;
  Frame frame;
  Nonce server_nonce{};
  if (!socket->WriteAll(sent, deadline).ok() ||
      !ReadFrameBytes(*socket, kMaxHandshakeBodyBytes, deadline, &reply).ok() ||
      !ParseFrame(reply, kMaxHandshakeBodyBytes, &frame).ok() ||
      !DecodeServerHello(frame.body, &server_nonce).ok()) {
    std::fprintf(stderr, "probe: the legitimate handshake failed\n");
    std::exit(2);
  }
  SessionKeys keys = DeriveSessionKeys(t.key, t.job_id, hello.client_nonce, server_nonce);
  FrameChannel channel(keys.client_to_server, keys.server_to_client, 1, 1, kDefaultMaxFrameBytes);
  std::string auth = channel.Seal(FrameType::kAuth, "");
  *set_frame =
      channel.Seal(FrameType::kSet, EncodeKvRequest({FrameType::kSet, kReplayedKey, "1", 0, 0}));
  std::string del = channel.Seal(FrameType::kDelete,
                                 EncodeKvRequest({FrameType::kDelete, kReplayedKey, "", 0, 0}));
  for (const std::string* f : {&auth, set_frame, &del}) {
    reply.clear();
    if (!socket->WriteAll(*f, deadline).ok() ||
        !ReadFrameBytes(*socket, kDefaultMaxFrameBytes, deadline, &reply).ok()) {
      std::fprintf(stderr, "probe: the legitimate session failed\n");
      std::exit(2);
    }
  }
  // The set frame once more on the same connection: a replay in the stream.
  reply.clear();
  Status replay = socket->WriteAll(*set_frame, deadline);
  if (replay.ok()) replay = ReadFrameBytes(*socket, kDefaultMaxFrameBytes, deadline, &reply);
  if (replay.ok()) {
    GotThrough("replay-same-connection", "the server answered a replayed request");
  } else {
    Refused("replay-same-connection", "connection closed");
  }
  return sent + auth + *set_frame + del;
}

int Run(const Target& t) {
  ExpectDenied("wrong-key", t, OtherKey(), t.job_id);
  ExpectDenied("other-job", t, OtherKey(), "another-job");
  ExpectDenied("other-job-id-with-this-key", t, t.key, "another-job");

  std::string set_frame;
  const std::string captured = CaptureSession(t, &set_frame);
  std::string why;
  // A replayed hello gets its server hello (its tag is valid); the replayed auth then fails.
  if (ClosedAfter(t, captured, 1, &why)) {
    Refused("replay-new-connection", "closed after the server hello");
  } else {
    GotThrough("replay-new-connection", why);
  }
  if (ClosedAfter(t, set_frame, 0, &why)) {
    Refused("request-without-handshake", why);
  } else {
    GotThrough("request-without-handshake", why);
  }
  if (ClosedAfter(t, "GET / HTTP/1.1\r\nHost: hvd\r\n\r\n", 0, &why)) {
    Refused("garbage", why);
  } else {
    GotThrough("garbage", why);
  }
  if (ClosedAfter(t, EncodeHeader({FrameType::kHello, 0, 0xffffffffu, 0}), 0, &why)) {
    Refused("4-GiB-length", why);
  } else {
    GotThrough("4-GiB-length", why);
  }

  // As a member: nothing the attacks sent was stored, and the server still serves.
  auto member = TcpKvClient::Connect(t.host, t.port, t.key, t.job_id, kTimeout);
  if (!member.ok()) {
    GotThrough("server-health",
               "a member cannot connect after the attacks: " + member.status().ToString());
    return 1;
  }
  for (const char* key : {kReplayedKey, "security/wrong-key", "security/other-job",
                          "security/other-job-id-with-this-key"}) {
    Result<std::string> value = (*member)->Get(key);
    if (value.ok()) GotThrough("state", std::string("key '") + key + "' was set");
  }
  std::printf("probe: %d attacks got through\n", failures);
  return failures == 0 ? 0 : 1;
}

}  // namespace
}  // namespace hvd::control

// The job's rendezvous and key as a rank reads them: the registry's declared variables.
hvd::Result<hvd::control::Target> TargetFromEnvironment() {
  const hvd::env::Environment env = hvd::env::Environment::FromProcess();
  HVD_ASSIGN_OR_RETURN(std::string host, env.GetString("HVD_RENDEZVOUS_ADDR"));
  HVD_ASSIGN_OR_RETURN(int64_t port, env.GetInt("HVD_RENDEZVOUS_PORT"));
  HVD_ASSIGN_OR_RETURN(std::string job, env.GetString("HVD_JOB_ID"));
  HVD_ASSIGN_OR_RETURN(int64_t fd, env.GetInt("HVD_SECRET_FD"));
  if (host.empty() || port <= 0 || port > 65535 || job.empty() || fd < 0) {
    return hvd::Status::InvalidArgument(
        "run as a rank of hvdrun (HVD_RENDEZVOUS_ADDR, HVD_RENDEZVOUS_PORT, HVD_JOB_ID or "
        "HVD_SECRET_FD unset)");
  }
  HVD_ASSIGN_OR_RETURN(hvd::control::JobKey key, hvd::control::ReadKeyFromFd(static_cast<int>(fd)));
  return hvd::control::Target{host, static_cast<uint16_t>(port), job, key};
}

int main() {
  hvd::Result<hvd::control::Target> target = TargetFromEnvironment();
  if (!target.ok()) {
    std::fprintf(stderr, "probe: %s\n", target.status().ToString().c_str());
    return 2;
  }
  return hvd::control::Run(*target);
}
