// SshSession's public-key authentication (identity file, ssh-agent, default keys).
#include <string.h>
#include <unistd.h>

#include <cerrno>
#include <memory>
#include <vector>

#include "launcher/ssh/ssh_session.h"

namespace hvd::launcher {
namespace {

struct AgentDeleter {
  void operator()(LIBSSH2_AGENT* agent) const {
    libssh2_agent_disconnect(agent);
    libssh2_agent_free(agent);
  }
};

bool Readable(const std::string& path, std::string* why) {
  if (::access(path.c_str(), R_OK) == 0) return true;
  *why = strerror(errno);
  return false;
}

}  // namespace

Status SshSession::Authenticate(Clock::time_point deadline) {
  const SshOptions& o = target_.options;
  const std::string& user = o.user;
  char* methods = nullptr;
  while ((methods = libssh2_userauth_list(session_, user.c_str(),
                                          static_cast<unsigned>(user.size()))) == nullptr) {
    if (libssh2_userauth_authenticated(session_)) return Status::OK();  // "none" was enough
    if (libssh2_session_last_errno(session_) != LIBSSH2_ERROR_EAGAIN) {
      return Status::IoError("ssh to " + where() +
                             ": cannot list authentication methods: " + LastError());
    }
    HVD_RETURN_IF_ERROR(WaitSocket(deadline, "authentication"));
  }
  if (strstr(methods, "publickey") == nullptr) {
    return Status::PermissionDenied("ssh to " + where() +
                                    ": the server does not accept public-key authentication "
                                    "(it offers: " +
                                    std::string(methods) + ")");
  }
  if (!o.identity_file.empty()) {
    std::string why;
    if (!Readable(o.identity_file, &why)) {
      return Status::InvalidArgument("ssh identity file '" + o.identity_file +
                                     "' cannot be read: " + why);
    }
    return AuthenticateWithFile(o.identity_file, deadline);
  }
  bool tried_agent = false;
  if (!o.agent_socket.empty()) {
    Status agent = AuthenticateWithAgent(deadline, &tried_agent);
    if (agent.ok() || agent.code() == StatusCode::kTimeout) return agent;
  }
  std::vector<std::string> tried;
  for (const std::string& path : o.DefaultIdentityFiles()) {
    if (::access(path.c_str(), R_OK) != 0) continue;
    tried.push_back(path);
    Status status = AuthenticateWithFile(path, deadline);
    if (status.ok() || status.code() == StatusCode::kTimeout) return status;
  }
  std::string what = tried_agent ? "the ssh-agent's keys" : "";
  for (const std::string& path : tried) what += (what.empty() ? "" : ", ") + path;
  if (what.empty()) {
    return Status::PermissionDenied(
        "ssh to " + where() +
        ": no identity to log in with: no ssh-agent (SSH_AUTH_SOCK) and "
        "none of " +
        o.home_dir +
        "/.ssh/id_{ed25519,ecdsa,rsa} exists; pass "
        "-i/--ssh-identity-file");
  }
  return Status::PermissionDenied("ssh to " + where() + ": public-key authentication as '" + user +
                                  "' was rejected (tried " + what + ")");
}

Status SshSession::AuthenticateWithFile(const std::string& path, Clock::time_point deadline) {
  const std::string& user = target_.options.user;
  int rc;
  while ((rc = libssh2_userauth_publickey_fromfile_ex(
              session_, user.c_str(), static_cast<unsigned>(user.size()), nullptr, path.c_str(),
              nullptr)) == LIBSSH2_ERROR_EAGAIN) {
    HVD_RETURN_IF_ERROR(WaitSocket(deadline, "authentication"));
  }
  if (rc == 0) return Status::OK();
  if (rc == LIBSSH2_ERROR_FILE || rc == LIBSSH2_ERROR_METHOD_NOT_SUPPORTED) {
    return Status::InvalidArgument("ssh to " + where() + ": cannot use identity file '" + path +
                                   "': " + LastError() +
                                   " (not a private key, or protected by a passphrase?)");
  }
  return Status::PermissionDenied("ssh to " + where() + ": public-key authentication as '" + user +
                                  "' with identity file '" + path +
                                  "' was rejected: " + LastError());
}

Status SshSession::AuthenticateWithAgent(Clock::time_point deadline, bool* tried) {
  std::unique_ptr<LIBSSH2_AGENT, AgentDeleter> agent(libssh2_agent_init(session_));
  if (!agent) return Status::Internal("libssh2_agent_init failed");
  libssh2_agent_set_identity_path(agent.get(), target_.options.agent_socket.c_str());
  if (libssh2_agent_connect(agent.get()) != 0 || libssh2_agent_list_identities(agent.get()) != 0) {
    return Status::PermissionDenied("ssh-agent at " + target_.options.agent_socket +
                                    " is not usable");
  }
  *tried = true;
  libssh2_agent_publickey* previous = nullptr;
  libssh2_agent_publickey* identity = nullptr;
  const std::string& user = target_.options.user;
  while (libssh2_agent_get_identity(agent.get(), &identity, previous) == 0) {
    int rc;
    while ((rc = libssh2_agent_userauth(agent.get(), user.c_str(), identity)) ==
           LIBSSH2_ERROR_EAGAIN) {
      HVD_RETURN_IF_ERROR(WaitSocket(deadline, "ssh-agent authentication"));
    }
    if (rc == 0) return Status::OK();
    previous = identity;
  }
  return Status::PermissionDenied("ssh to " + where() + ": no ssh-agent key was accepted");
}

}  // namespace hvd::launcher
