#include "launcher/ssh/ssh_options.h"

#include <pwd.h>
#include <unistd.h>

#include <vector>

namespace hvd::launcher {
namespace {

// The password database entry of the current user ("" fields when there is none).
void FromPasswd(std::string* user, std::string* home) {
  std::vector<char> buffer(16384);
  passwd entry{};
  passwd* found = nullptr;
  if (::getpwuid_r(::getuid(), &entry, buffer.data(), buffer.size(), &found) != 0 || !found) {
    return;
  }
  if (user->empty() && found->pw_name) *user = found->pw_name;
  if (home->empty() && found->pw_dir) *home = found->pw_dir;
}

}  // namespace

SshOptions SshOptions::FromEnvironment(const env::Environment& env) {
  SshOptions options;
  options.user = env.Raw("USER").value_or(env.Raw("LOGNAME").value_or(""));
  options.home_dir = env.Raw("HOME").value_or("");
  options.agent_socket = env.Raw("SSH_AUTH_SOCK").value_or("");
  if (options.user.empty() || options.home_dir.empty()) {
    FromPasswd(&options.user, &options.home_dir);
  }
  return options;
}

std::string SshOptions::KnownHostsPath() const {
  if (!known_hosts_file.empty()) return known_hosts_file;
  return home_dir + "/.ssh/known_hosts";
}

std::vector<std::string> SshOptions::DefaultIdentityFiles() const {
  return {home_dir + "/.ssh/id_ed25519", home_dir + "/.ssh/id_ecdsa", home_dir + "/.ssh/id_rsa"};
}

std::string SshTarget::Describe() const {
  return (options.user.empty() ? "" : options.user + "@") + host + ":" +
         std::to_string(options.port);
}

}  // namespace hvd::launcher
