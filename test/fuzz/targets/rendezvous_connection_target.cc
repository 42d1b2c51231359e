// Target "rendezvous_connection": the rendezvous server's side of one connection
// (launcher/rendezvous/rendezvous_session.h) driven from a byte buffer exactly as
// RendezvousConnection drives it from its socket: read a header, check it against max_body(), read
// body and tag, hand the frame to OnFrame, send the reply, stop at the first fault. Requests run
// against a real KvStore.
//
// Input: a mode byte, then the stream. Mode bit 0 clear: the stream is what a peer sends from
// its first byte, as anyone who can reach the port can (the corpus holds valid handshakes
// under the fixed test key, so mutations also reach requests). Bit 0 set: the harness is a
// client holding the key; it completes the handshake, then reads the stream as requests, each
// a type byte, a 16-bit length and that many body bytes, sealed in sequence; a type byte with
// its top bit set sends the piece as it is (unsealed bytes, a replay, garbage). Bit 1: the
// server admits any job id (options.job_id empty), as a shared server would. Every reply the
// server sends is a well-formed frame; to the authenticated client it opens under the session
// key, in sequence, and decodes as a response.
#include <optional>

#include "common/check.h"
#include "launcher/rendezvous/rendezvous_session.h"
#include "test/fuzz/fuzz_input.h"
#include "test/fuzz/fuzz_keys.h"
#include "test/fuzz/fuzz_target.h"

namespace hvd::fuzz {
namespace {

using control::FrameType;
using launcher::internal::RendezvousSession;

class Harness {
 public:
  explicit Harness(bool any_job) {
    options_.key = FuzzJobKey();
    options_.job_id = any_job ? "" : std::string(kFuzzJobId);
    options_.observers.push_back(
        {"elastic/ready/", [this](const std::string&, const std::string&) { ++observed_; }});
    context_.options = &options_;
    context_.hello_key = control::HelloKey(options_.key);
    context_.store = &store_;
    context_.counters = &counters_;
    context_.server_name = "fuzz";
    context_.on_close = [](uint64_t) {};
    context_.aborted_prefixes = &aborted_;
  }

  // The client of the authenticated mode: hello and auth as KvClient sends them.
  void Authenticate() {
    control::Hello hello{FuzzClientNonce(), std::string(kFuzzJobId)};
    Feed(control::EncodeFrame(context_.hello_key, FrameType::kHello, 0,
                              control::EncodeHello(hello)));
    HVD_CHECK(session_.state() == RendezvousSession::State::kAuth) << outcome_;
    const control::SessionKeys keys = FuzzSessionKeys();
    client_.emplace(keys.client_to_server, keys.server_to_client, 1, 1,
                    control::kDefaultMaxFrameBytes);
    Feed(client_->Seal(FrameType::kAuth, ""));
    HVD_CHECK(session_.state() == RendezvousSession::State::kReady) << outcome_;
  }

  // Bytes arriving on the socket; false once the server has closed the connection.
  bool Feed(std::string_view bytes) {
    pending_.append(bytes);
    while (open_ && pending_.size() >= control::kFrameHeaderBytes) {
      control::FrameHeader header;
      control::FrameCheck check =
          control::DecodeHeader(std::string_view(pending_).substr(0, control::kFrameHeaderBytes),
                                session_.max_body(), &header);
      if (!check.ok()) return Close(check.detail);
      const size_t total =
          control::kFrameHeaderBytes + header.body_length + control::kFrameTagBytes;
      if (pending_.size() < total) break;
      RendezvousSession::Step step = session_.OnFrame(std::string_view(pending_).substr(0, total));
      pending_.erase(0, total);
      if (!step.ok()) return Close(step.detail);
      if (step.wait) {
        std::optional<std::string> value = store_.Get(session_.job_id(), step.wait->key);
        step.reply = session_.WaitAnswer(step.wait->key, value, step.wait->timeout_ms);
      }
      CheckReply(step.reply);
    }
    return open_;
  }

  bool Send(FrameType type, std::string_view body) { return Feed(client_->Seal(type, body)); }
  std::string Finish() { return std::move(outcome_); }

 private:
  bool Close(std::string_view why) {
    Note(&outcome_, why);
    session_.Close();
    open_ = false;
    return false;
  }

  void CheckReply(const std::string& reply) {
    control::Frame frame;
    control::FrameCheck check = control::ParseFrame(reply, control::kDefaultMaxFrameBytes, &frame);
    HVD_CHECK(check.ok()) << "the server sent a malformed frame: " << check.detail;
    if (!client_) return;
    check = client_->Open(reply, &frame);
    HVD_CHECK(check.ok()) << "the client cannot open the server's reply: " << check.detail;
    if (frame.header.type != FrameType::kResponse) return;
    Result<control::KvResponse> response = control::DecodeKvResponse(frame.body);
    HVD_CHECK(response.ok()) << response.status().message();
    if (response->code != StatusCode::kOk) Note(&outcome_, response->message);
  }

  launcher::RendezvousServerOptions options_;
  control::KvStore store_;
  launcher::internal::RendezvousCounters counters_;
  const std::vector<std::pair<std::string, std::string>> aborted_ = {
      {"aborted/", "the round was given up"}};
  launcher::internal::ConnectionContext context_;
  RendezvousSession session_{&context_, 1, [] { return FuzzServerNonce(); }};
  std::optional<control::FrameChannel> client_;
  std::string pending_;
  bool open_ = true;
  int observed_ = 0;
  std::string outcome_;
};

}  // namespace

std::string FuzzRendezvousConnection(std::string_view input) {
  FuzzInput in(input);
  const uint8_t mode = in.Byte();
  Harness harness(/*any_job=*/mode & 2);
  if (!(mode & 1)) {
    harness.Feed(in.Rest());
    return harness.Finish();
  }
  harness.Authenticate();
  while (!in.empty()) {
    const uint8_t type = in.Byte();
    const size_t length = (size_t{in.Byte()} << 8) | in.Byte();
    std::string_view body = in.Take(length);
    const bool open =
        type & 0x80 ? harness.Feed(body) : (harness.Send(static_cast<FrameType>(type), body), true);
    if (!open) break;
  }
  return harness.Finish();
}

}  // namespace hvd::fuzz
