#ifndef HVD_RUNTIME_TCP_ALGORITHMS_H_
#define HVD_RUNTIME_TCP_ALGORITHMS_H_

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "common/status.h"
#include "runtime/tcp_transport.h"

namespace hvd::runtime {

// The collective algorithms of the TCP communicator, as stream plans over a TcpTransport.
// Stateless apart from the scratch they are handed; one call at a time per transport.
// `what` prefixes every error. Every reduction combines each element in one fixed order
// (ascending rank for the direct paths, the ring order for the ring), so every rank ends with
// the same bits.
class TcpAlgorithms {
 public:
  TcpAlgorithms(TcpTransport* transport, int rank, int size)
      : t_(transport), rank_(rank), size_(size) {}

  void set_deadline(TcpTransport::Clock::time_point deadline) { deadline_ = deadline; }

  // Every rank sends its `bytes` to every peer; result = a0 op a1 op ... op a(n-1).
  Status DirectAllreduce(char* buf, size_t bytes, const TcpReducer& red, const std::string& what);
  // Pipelined ring over segments seg_bytes[i] (element multiples) laid out in order in `buf`:
  // reduce-scatter leaves rank r owning the reduced segment r; with `allgather` every rank
  // then receives every reduced segment.
  Status Ring(char* buf, const std::vector<size_t>& seg_bytes, const TcpReducer& red,
              bool allgather, const std::string& what);
  // Rank r receives the reduction of everybody's segment r of `in` into `out` (direct).
  Status DirectReduceScatter(const char* in, char* out, const std::vector<size_t>& seg_bytes,
                             const TcpReducer& red, const std::string& what);
  // `out` holds this rank's part at its offset already; receives every other part.
  Status Allgatherv(char* out, const std::vector<size_t>& part_bytes, bool ring,
                    const std::string& what);
  Status Broadcast(char* buf, size_t bytes, int root, bool chain, const std::string& what);
  Status Alltoallv(const char* in, const std::vector<size_t>& send_bytes, char* out,
                   const std::vector<size_t>& recv_bytes, const std::string& what);
  Status GatherBytes(const std::string& in, int root, std::vector<std::string>* out,
                     const std::string& what);
  Status BroadcastBytes(std::string* data, int root, const std::string& what);
  // Zero-byte-payload exchange with every peer (1 byte each way).
  Status Barrier(const std::string& what);

 private:
  Status Run(std::vector<TcpStream>& streams, const TcpReducer* red, const std::string& what) {
    return t_->Run(streams, red, deadline_, what);
  }
  char* Scratch(size_t bytes);

  TcpTransport* const t_;
  const int rank_;
  const int size_;
  TcpTransport::Clock::time_point deadline_{};
  std::vector<char> scratch_;  // grown, never shrunk
};

}  // namespace hvd::runtime

#endif  // HVD_RUNTIME_TCP_ALGORITHMS_H_
