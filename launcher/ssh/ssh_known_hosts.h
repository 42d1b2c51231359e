#ifndef HVD_LAUNCHER_SSH_SSH_KNOWN_HOSTS_H_
#define HVD_LAUNCHER_SSH_SSH_KNOWN_HOSTS_H_

#include <libssh2.h>

#include <string>
#include <string_view>
#include <vector>

#include "common/status.h"
#include "launcher/ssh/ssh_options.h"

namespace hvd::launcher {

// Host-key verification against an OpenSSH known_hosts file (plain or hashed names,
// "[host]:port" for ports other than 22), as OpenSSH does it:
//   - the host's key for the negotiated type is recorded and equal  -> OK;
//   - a different key of that type is recorded -> PermissionDenied naming the host, the
//     presented key's SHA256 fingerprint and the ssh-keygen -R command; never overridable;
//   - nothing recorded -> PermissionDenied with the ssh-keyscan hint under kStrict; under
//     kAcceptNew the key is appended to the file (created 0600, its directory 0700).
//   - the presented key is on an "@revoked" line (for any host: a revoked key is never
//     accepted, as OpenSSH never accepts one) -> PermissionDenied naming the host, the key and
//     the file, under every policy, before any of the above.
// Lines libssh2 cannot parse (certificate authorities, unsupported key types) are skipped
// rather than making the whole file unreadable. A missing file is an empty one.
//
// Threading: safe to call concurrently for different sessions; appends are serialized
// within the process and written with one O_APPEND write.
Status VerifyHostKey(LIBSSH2_SESSION* session, const std::string& host, int port,
                     const std::string& known_hosts_path, HostKeyPolicy policy);

// The key blobs (base64-decoded) of the "@revoked" lines of a known_hosts file's text:
// "@revoked <hosts> <type> <base64> [comment]". Lines that are not, or whose key does not
// decode, are left out.
std::vector<std::string> RevokedKeys(std::string_view known_hosts_text);

// "SHA256:<base64>" of the key the server presented, as ssh-keygen -l prints it.
std::string HostKeyFingerprint(LIBSSH2_SESSION* session);

}  // namespace hvd::launcher

#endif  // HVD_LAUNCHER_SSH_SSH_KNOWN_HOSTS_H_
