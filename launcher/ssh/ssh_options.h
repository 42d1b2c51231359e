#ifndef HVD_LAUNCHER_SSH_SSH_OPTIONS_H_
#define HVD_LAUNCHER_SSH_SSH_OPTIONS_H_

#include <string>
#include <vector>

#include "common/env_registry.h"

namespace hvd::launcher {

// What to do with a host whose key is not in known_hosts. A key that is there and differs
// is always an error (there is deliberately no "accept anything" mode: Horovod's
// StrictHostKeyChecking=no is a man-in-the-middle hole).
enum class HostKeyPolicy {
  kStrict,     // unknown host = error (OpenSSH StrictHostKeyChecking=yes); the default
  kAcceptNew,  // unknown host: trust and append to known_hosts (OpenSSH "accept-new")
};

// How to reach remote hosts; one value serves every host of a job. Plain data.
struct SshOptions {
  std::string user;  // login name; "" = the local user (SshOptions::FromEnvironment)
  int port = 22;     // hvdrun -p/--ssh-port
  // hvdrun -i/--ssh-identity-file. "" = ssh-agent (agent_socket), then the first of
  // DefaultIdentityFiles() that exists.
  std::string identity_file;
  std::string known_hosts_file;  // "" = <home>/.ssh/known_hosts
  HostKeyPolicy host_key_policy = HostKeyPolicy::kStrict;
  // Bounds one attempt: TCP connect, SSH handshake, host key check and authentication.
  double connect_timeout_s = 10;
  // Attempts for transient failures only (refused, unreachable, timed out); a wrong host key
  // or a rejected login fails at once. Horovod's pre-check tries 5 times.
  int connect_attempts = 1;
  double retry_backoff_s = 1;
  // SSH keepalive while a rank runs, and TCP_USER_TIMEOUT: a host that vanishes without a
  // FIN/RST is detected after about dead_peer_timeout_s. 0 disables either.
  double keepalive_interval_s = 15;
  double dead_peer_timeout_s = 60;
  std::string agent_socket;  // SSH_AUTH_SOCK; "" = do not use an agent
  std::string home_dir;      // for the ~/.ssh defaults

  // user (USER/LOGNAME, else the password database), home_dir (HOME, else the password
  // database) and agent_socket (SSH_AUTH_SOCK) from `env`; everything else defaulted.
  static SshOptions FromEnvironment(const env::Environment& env);

  std::string KnownHostsPath() const;
  // <home>/.ssh/id_ed25519, id_ecdsa, id_rsa: tried in this order when no identity is given.
  std::vector<std::string> DefaultIdentityFiles() const;
};

// One remote host as named on the command line (-H, hostfile, discovery): the name is what
// is resolved and what known_hosts is checked against.
struct SshTarget {
  std::string host;
  SshOptions options;

  // "root@hvd-h1:22", for messages.
  std::string Describe() const;
};

}  // namespace hvd::launcher

#endif  // HVD_LAUNCHER_SSH_SSH_OPTIONS_H_
