// The TCP data connections' handshake (runtime/transports/tcp/tcp_handshake.h) without sockets:
// the acceptor's and the connector's sides against each other, and what the acceptor refuses.
// tcp_multiproc_test runs it over real connections (TcpFailure.WrongKeyAndStrayConnections...).
#include "runtime/transports/tcp/tcp_handshake.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <string>

namespace hvd::runtime {
namespace {

HandshakeContext Context(const std::string& scope) {
  control::JobKey key{};
  key.fill(0x42);
  return {key, "job-1", scope};
}

TEST(AcceptorHandshakeTest, AcceptsTheRankThatAnswersTheChallenge) {
  // Given rank 1 of 4 accepting, and rank 3 connecting
  const HandshakeContext ctx = Context("global");
  AcceptorHandshake acceptor(ctx, 1, 4, NewNonce());
  const Hello hello{3, 1, 4, NewNonce()};
  // When rank 3 sends its hello, then the proof for the challenge it got
  ASSERT_EQ(acceptor.want(), kHelloBytes);
  AcceptorHandshake::Step challenge = acceptor.Feed(EncodeHello(hello).data());
  ASSERT_TRUE(challenge.refused.empty()) << challenge.refused;
  ASSERT_EQ(challenge.send.size(), kReplyBytes);
  std::optional<control::MacTag> proof = AnswerReply(ctx, hello, challenge.send.data());
  ASSERT_TRUE(proof.has_value());
  ASSERT_EQ(acceptor.want(), kProofBytes);
  AcceptorHandshake::Step done = acceptor.Feed(proof->data());
  // Then the connection is rank 3's, and the handshake is over
  EXPECT_TRUE(done.authenticated);
  EXPECT_TRUE(done.refused.empty());
  EXPECT_EQ(acceptor.from(), 3);
  EXPECT_EQ(acceptor.want(), 0u);
}

TEST(AcceptorHandshakeTest, RefusesStrangersNamingWhy) {
  const HandshakeContext ctx = Context("global");
  struct Case {
    const char* name;
    Hello hello;
    const char* refused;
  };
  const Case cases[] = {
      {"addressed to another rank", {3, 2, 4, {}}, "unexpected ranks (from 3 to 2 of 4)"},
      {"another group size", {3, 1, 5, {}}, "unexpected ranks (from 3 to 1 of 5)"},
      {"a lower rank (it accepts, never connects)", {0, 1, 4, {}}, "unexpected ranks (from 0"},
      {"itself", {1, 1, 4, {}}, "unexpected ranks (from 1"},
      {"a rank past the group", {4, 1, 4, {}}, "unexpected ranks (from 4"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    AcceptorHandshake acceptor(ctx, 1, 4, NewNonce());
    AcceptorHandshake::Step step = acceptor.Feed(EncodeHello(c.hello).data());
    EXPECT_NE(step.refused.find(c.refused), std::string::npos) << step.refused;
    EXPECT_TRUE(step.send.empty());
    EXPECT_EQ(acceptor.want(), 0u);
  }
  // Not an hvd connection at all
  AcceptorHandshake stray(ctx, 1, 4, NewNonce());
  const std::string http = "GET / HTTP/1.1\r\nHost: rank-1\r\n\r\n" + std::string(kHelloBytes, ' ');
  EXPECT_EQ(stray.Feed(reinterpret_cast<const uint8_t*>(http.data())).refused,
            "not an hvd data connection");
}

TEST(AcceptorHandshakeTest, RefusesAProofMadeUnderAnotherKeyJobOrScope) {
  const Hello hello{2, 0, 3, NewNonce()};
  for (const char* scope : {"global/other", "global"}) {
    for (bool other_job : {false, true}) {
      HandshakeContext connector = Context(scope);
      if (other_job) connector.job_id = "job-2";
      if (std::string(scope) == "global" && !other_job) connector.key[0] ^= 1;  // another key
      SCOPED_TRACE(std::string(scope) + (other_job ? " job-2" : ""));
      // Given an acceptor of this job, key and scope
      const HandshakeContext ctx = Context("global");
      AcceptorHandshake acceptor(ctx, 0, 3, NewNonce());
      AcceptorHandshake::Step challenge = acceptor.Feed(EncodeHello(hello).data());
      ASSERT_TRUE(challenge.refused.empty());
      // When the connector cannot check its challenge, and answers anyway with its own proof
      EXPECT_FALSE(AnswerReply(connector, hello, challenge.send.data()).has_value());
      Nonce nonce_a;
      std::copy(challenge.send.begin(), challenge.send.begin() + kNonceBytes, nonce_a.begin());
      const control::MacTag proof = ConnectorTag(connector, hello, nonce_a);
      AcceptorHandshake::Step step = acceptor.Feed(proof.data());
      // Then the acceptor refuses it, naming the claimed rank
      EXPECT_FALSE(step.authenticated);
      EXPECT_EQ(step.refused,
                "authentication failed (wrong job key, job or scope) for claimed rank 2");
    }
  }
}

}  // namespace
}  // namespace hvd::runtime
