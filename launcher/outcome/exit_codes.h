#ifndef HVD_LAUNCHER_OUTCOME_EXIT_CODES_H_
#define HVD_LAUNCHER_OUTCOME_EXIT_CODES_H_

// hvdrun's exit-code contract (documented in README.md):
//   0            every rank exited 0
//   1..125       the first failing rank's own exit code
//   128+N        the first failing rank was killed by signal N; also hvdrun's own code when it
//                was stopped by SIGINT (130), SIGTERM (143) or SIGHUP (129)
//   126 / 127    the command is not executable / not found (reported like a shell would)
//   141          hvdrun's own output pipe was closed (128+SIGPIPE)
//   kUsage       bad command line, config file, host spec or hostfile, or a malformed runtime
//                variable (nothing was started)
//   kLaunchFailed a rank could not be started (fork/pipe failed, rendezvous server could not
//                bind, output directory could not be created)
//   kTimeout     --start-timeout (or another launcher deadline) expired
//   kInternal    a bug in hvdrun
namespace hvd::launcher {

inline constexpr int kExitOk = 0;
inline constexpr int kExitUsage = 64;         // sysexits EX_USAGE
inline constexpr int kExitLaunchFailed = 69;  // sysexits EX_UNAVAILABLE
inline constexpr int kExitInternal = 70;      // sysexits EX_SOFTWARE
inline constexpr int kExitTimeout = 124;      // as timeout(1)
inline constexpr int kExitSignalBase = 128;

}  // namespace hvd::launcher

#endif  // HVD_LAUNCHER_OUTCOME_EXIT_CODES_H_
