#include "launcher/ssh/ssh_known_hosts.h"

#include <errno.h>
#include <fcntl.h>
#include <openssl/evp.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <iterator>
#include <memory>
#include <mutex>

namespace hvd::launcher {
namespace {

struct KnownHostsDeleter {
  void operator()(LIBSSH2_KNOWNHOSTS* kh) const { libssh2_knownhost_free(kh); }
};
using KnownHostsPtr = std::unique_ptr<LIBSSH2_KNOWNHOSTS, KnownHostsDeleter>;

int KnownHostKeyBits(int hostkey_type) {
  switch (hostkey_type) {
    case LIBSSH2_HOSTKEY_TYPE_RSA:
      return LIBSSH2_KNOWNHOST_KEY_SSHRSA;
    case LIBSSH2_HOSTKEY_TYPE_DSS:
      return LIBSSH2_KNOWNHOST_KEY_SSHDSS;
    case LIBSSH2_HOSTKEY_TYPE_ECDSA_256:
      return LIBSSH2_KNOWNHOST_KEY_ECDSA_256;
    case LIBSSH2_HOSTKEY_TYPE_ECDSA_384:
      return LIBSSH2_KNOWNHOST_KEY_ECDSA_384;
    case LIBSSH2_HOSTKEY_TYPE_ECDSA_521:
      return LIBSSH2_KNOWNHOST_KEY_ECDSA_521;
    case LIBSSH2_HOSTKEY_TYPE_ED25519:
      return LIBSSH2_KNOWNHOST_KEY_ED25519;
    default:
      return LIBSSH2_KNOWNHOST_KEY_UNKNOWN;
  }
}

const char* KeyTypeName(int hostkey_type) {
  switch (hostkey_type) {
    case LIBSSH2_HOSTKEY_TYPE_RSA:
      return "RSA";
    case LIBSSH2_HOSTKEY_TYPE_DSS:
      return "DSA";
    case LIBSSH2_HOSTKEY_TYPE_ECDSA_256:
    case LIBSSH2_HOSTKEY_TYPE_ECDSA_384:
    case LIBSSH2_HOSTKEY_TYPE_ECDSA_521:
      return "ECDSA";
    case LIBSSH2_HOSTKEY_TYPE_ED25519:
      return "ED25519";
    default:
      return "unknown";
  }
}

// Takes the file's text line by line so one line libssh2 cannot parse does not hide the rest.
KnownHostsPtr Load(LIBSSH2_SESSION* session, std::string_view text) {
  KnownHostsPtr kh(libssh2_knownhost_init(session));
  if (!kh) return kh;
  while (!text.empty()) {
    const size_t end = text.find('\n');
    const std::string_view line = text.substr(0, end);
    text = end == std::string_view::npos ? std::string_view() : text.substr(end + 1);
    if (line.empty() || line[0] == '#' || line[0] == '@') continue;
    const std::string terminated(line);  // as getline gave it: NUL-terminated
    (void)libssh2_knownhost_readline(kh.get(), terminated.data(), terminated.size(),
                                     LIBSSH2_KNOWNHOST_FILE_OPENSSH);
  }
  return kh;
}

std::string HostPattern(const std::string& host, int port) {
  return port == 22 ? host : "[" + host + "]:" + std::to_string(port);
}

// Appends one entry; creates the file (0600) and its directory (0700) when missing.
Status Append(LIBSSH2_KNOWNHOSTS* kh, libssh2_knownhost* entry, const std::string& path) {
  static std::mutex append_mutex;
  std::lock_guard<std::mutex> lock(append_mutex);
  char line[8192];
  size_t length = 0;
  if (libssh2_knownhost_writeline(kh, entry, line, sizeof(line), &length,
                                  LIBSSH2_KNOWNHOST_FILE_OPENSSH) != 0) {
    return Status::Internal("cannot format a known_hosts line for " + path);
  }
  size_t slash = path.rfind('/');
  if (slash != std::string::npos && slash > 0) ::mkdir(path.substr(0, slash).c_str(), 0700);
  int fd = ::open(path.c_str(), O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0600);
  if (fd < 0)
    return Status::IoError("cannot open " + path + " to add a host key: " + strerror(errno));
  ssize_t n = ::write(fd, line, length);
  int err = errno;
  ::close(fd);
  if (n != static_cast<ssize_t>(length)) {
    return Status::IoError("cannot append to " + path + ": " + strerror(err));
  }
  return Status::OK();
}

// The whole file's text ("" when it cannot be read: a missing file is an empty one).
std::string ReadText(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

// Standard base64 (no line breaks), padding allowed; false on anything else.
bool DecodeBase64(std::string_view text, std::string* out) {
  if (text.empty() || text.size() % 4 != 0 || text.size() > (1u << 20)) return false;
  std::string decoded(text.size() / 4 * 3, '\0');
  const int n = EVP_DecodeBlock(reinterpret_cast<unsigned char*>(decoded.data()),
                                reinterpret_cast<const unsigned char*>(text.data()),
                                static_cast<int>(text.size()));
  if (n < 0) return false;
  size_t pad = 0;
  if (text.back() == '=') pad = text[text.size() - 2] == '=' ? 2 : 1;
  decoded.resize(static_cast<size_t>(n) - pad);
  *out = std::move(decoded);
  return true;
}

}  // namespace

std::vector<std::string> RevokedKeys(std::string_view text) {
  std::vector<std::string> keys;
  while (!text.empty()) {
    const size_t end = text.find('\n');
    std::string_view line = text.substr(0, end);
    text = end == std::string_view::npos ? std::string_view() : text.substr(end + 1);
    // Fields separated by spaces or tabs: the marker, the hosts, the key type, the key.
    std::string_view fields[4];
    int n = 0;
    for (size_t i = 0; n < 4;) {
      while (i < line.size() && (line[i] == ' ' || line[i] == '\t' || line[i] == '\r')) ++i;
      if (i >= line.size()) break;
      size_t j = i;
      while (j < line.size() && line[j] != ' ' && line[j] != '\t' && line[j] != '\r') ++j;
      fields[n++] = line.substr(i, j - i);
      i = j;
    }
    std::string blob;
    if (n == 4 && fields[0] == "@revoked" && DecodeBase64(fields[3], &blob)) {
      keys.push_back(std::move(blob));
    }
  }
  return keys;
}

std::string HostKeyFingerprint(LIBSSH2_SESSION* session) {
  const char* hash = libssh2_hostkey_hash(session, LIBSSH2_HOSTKEY_HASH_SHA256);
  if (hash == nullptr) return "SHA256:?";
  unsigned char encoded[64] = {};
  int n = EVP_EncodeBlock(encoded, reinterpret_cast<const unsigned char*>(hash), 32);
  std::string text(reinterpret_cast<char*>(encoded), static_cast<size_t>(n));
  while (!text.empty() && text.back() == '=') text.pop_back();
  return "SHA256:" + text;
}

Status VerifyHostKey(LIBSSH2_SESSION* session, const std::string& host, int port,
                     const std::string& known_hosts_path, HostKeyPolicy policy) {
  const std::string where = host + ":" + std::to_string(port);
  size_t key_length = 0;
  int key_type = 0;
  const char* key = libssh2_session_hostkey(session, &key_length, &key_type);
  if (key == nullptr) return Status::Internal("no host key received from " + where);
  const std::string described =
      std::string(KeyTypeName(key_type)) + " key " + HostKeyFingerprint(session);

  // A revoked key first, whatever else the file says of the host (OpenSSH: "Host key for ...
  // was revoked and cannot be used").
  const std::string_view presented(key, key_length);
  const std::string text = ReadText(known_hosts_path);
  for (const std::string& revoked : RevokedKeys(text)) {
    if (revoked == presented) {
      return Status::PermissionDenied("the host key of " + where + " (" + described +
                                      ") is marked @revoked in " + known_hosts_path +
                                      ": it is never accepted; the host must get a new key");
    }
  }
  KnownHostsPtr kh = Load(session, text);
  if (!kh) return Status::Internal("libssh2_knownhost_init failed");
  const int type_mask =
      LIBSSH2_KNOWNHOST_TYPE_PLAIN | LIBSSH2_KNOWNHOST_KEYENC_RAW | KnownHostKeyBits(key_type);
  libssh2_knownhost* found = nullptr;
  int check =
      libssh2_knownhost_checkp(kh.get(), host.c_str(), port, key, key_length, type_mask, &found);
  if (check == LIBSSH2_KNOWNHOST_CHECK_MATCH) return Status::OK();
  if (check == LIBSSH2_KNOWNHOST_CHECK_MISMATCH) {
    return Status::PermissionDenied(
        "HOST KEY OF " + where + " HAS CHANGED: it presented " + described +
        ", which does not match the key recorded for '" + host + "' in " + known_hosts_path +
        ". Someone may be intercepting the connection, or the host was reinstalled; if the "
        "change is expected, remove the old entry with: ssh-keygen -R '" +
        HostPattern(host, port) + "' -f " + known_hosts_path);
  }
  if (check == LIBSSH2_KNOWNHOST_CHECK_FAILURE) {
    return Status::Internal("checking the host key of " + where + " against " + known_hosts_path +
                            " failed");
  }
  if (policy == HostKeyPolicy::kStrict) {
    std::error_code ec;
    const bool exists = std::filesystem::exists(known_hosts_path, ec);
    return Status::PermissionDenied(
        "host " + where + " is not in " + known_hosts_path +
        (exists ? "" : " (which does not exist)") + " (it presented " + described +
        "). Verify and add it, e.g. ssh-keyscan -p " + std::to_string(port) + " " + host + " >> " +
        known_hosts_path +
        ", or give hvdrun --ssh-accept-new-host-keys to record new hosts on first use (or "
        "--ssh-known-hosts FILE for another known_hosts file)");
  }
  libssh2_knownhost* added = nullptr;
  std::string pattern = HostPattern(host, port);
  if (libssh2_knownhost_addc(kh.get(), pattern.c_str(), nullptr, key, key_length, "", 0, type_mask,
                             &added) != 0) {
    return Status::Internal("cannot record the host key of " + where);
  }
  return Append(kh.get(), added, known_hosts_path);
}

}  // namespace hvd::launcher
