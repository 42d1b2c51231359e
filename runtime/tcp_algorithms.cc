#include "runtime/tcp_algorithms.h"

#include <cstring>

namespace hvd::runtime {
namespace {

std::vector<size_t> Offsets(const std::vector<size_t>& bytes) {
  std::vector<size_t> off(bytes.size() + 1, 0);
  for (size_t i = 0; i < bytes.size(); ++i) off[i + 1] = off[i] + bytes[i];
  return off;
}

TcpStream Stream(int peer, bool send, std::vector<TcpPiece> pieces) {
  TcpStream s;
  s.peer = peer;
  s.send = send;
  s.pieces = std::move(pieces);
  return s;
}

void EncodeLength(uint64_t v, uint8_t out[8]) {
  for (int i = 0; i < 8; ++i) out[i] = static_cast<uint8_t>(v >> (8 * i));
}

}  // namespace

char* TcpAlgorithms::Scratch(size_t bytes) {
  if (scratch_.size() < bytes) scratch_.resize(bytes);
  return scratch_.data();
}

Status TcpAlgorithms::DirectAllreduce(char* buf, size_t bytes, const TcpReducer& red,
                                      const std::string& what) {
  char* slots = Scratch(bytes * size_);
  std::vector<TcpStream> streams;
  streams.reserve(2 * size_);
  for (int j = 0; j < size_; ++j) {
    if (j == rank_) continue;
    streams.push_back(Stream(j, true, {{buf, bytes, false}}));
    streams.push_back(Stream(j, false, {{slots + j * bytes, bytes, false}}));
  }
  HVD_RETURN_IF_ERROR(Run(streams, nullptr, what));
  // a0 op a1 op ... in rank order, accumulated in rank 0's slot (or in place on rank 0).
  const int64_t count = static_cast<int64_t>(bytes / red.elem);
  char* acc = rank_ == 0 ? buf : slots;
  for (int j = 1; j < size_; ++j) red.fn(acc, j == rank_ ? buf : slots + j * bytes, count);
  if (acc != buf) std::memcpy(buf, acc, bytes);
  return Status::OK();
}

Status TcpAlgorithms::Ring(char* buf, const std::vector<size_t>& seg_bytes, const TcpReducer& red,
                           bool allgather, const std::string& what) {
  const int n = size_;
  const std::vector<size_t> off = Offsets(seg_bytes);
  auto seg = [&](int i, bool reduce) {
    i = ((i % n) + n) % n;
    return TcpPiece{buf + off[i], seg_bytes[i], reduce};
  };
  // Reduce-scatter step i sends segment r-1-i and folds segment r-2-i arriving from the left
  // into the local copy; what arrives (reduced) is exactly what is sent next, so the send
  // stream may run ahead of the receive stream by its first segment only. The allgather then
  // forwards segment r (now complete) and every complete segment arriving from the left.
  std::vector<TcpStream> streams(2);
  TcpStream& out = streams[0];
  TcpStream& in = streams[1];
  out.peer = (rank_ + 1) % n;
  out.send = true;
  in.peer = (rank_ - 1 + n) % n;
  for (int i = 0; i < n - 1; ++i) {
    out.pieces.push_back(seg(rank_ - 1 - i, false));
    in.pieces.push_back(seg(rank_ - 2 - i, true));
  }
  if (allgather) {
    for (int j = 0; j < n - 1; ++j) {
      out.pieces.push_back(seg(rank_ - j, false));
      in.pieces.push_back(seg(rank_ - 1 - j, false));
    }
  }
  out.ready = seg_bytes[(rank_ - 1 + n) % n];
  out.source = &in;
  return Run(streams, &red, what);
}

Status TcpAlgorithms::DirectReduceScatter(const char* in, char* out,
                                          const std::vector<size_t>& seg_bytes,
                                          const TcpReducer& red, const std::string& what) {
  const std::vector<size_t> off = Offsets(seg_bytes);
  const size_t mine = seg_bytes[rank_];
  char* slots = Scratch(mine * size_);
  if (mine > 0) std::memcpy(slots + rank_ * mine, in + off[rank_], mine);
  std::vector<TcpStream> streams;
  streams.reserve(2 * size_);
  for (int j = 0; j < size_; ++j) {
    if (j == rank_) continue;
    streams.push_back(Stream(j, true, {{const_cast<char*>(in) + off[j], seg_bytes[j], false}}));
    streams.push_back(Stream(j, false, {{slots + j * mine, mine, false}}));
  }
  HVD_RETURN_IF_ERROR(Run(streams, nullptr, what));
  if (mine == 0) return Status::OK();
  const int64_t count = static_cast<int64_t>(mine / red.elem);
  for (int j = 1; j < size_; ++j) red.fn(slots, slots + j * mine, count);
  std::memcpy(out, slots, mine);
  return Status::OK();
}

Status TcpAlgorithms::Allgatherv(char* out, const std::vector<size_t>& part_bytes, bool ring,
                                 const std::string& what) {
  const int n = size_;
  const std::vector<size_t> off = Offsets(part_bytes);
  auto part = [&](int i) {
    i = ((i % n) + n) % n;
    return TcpPiece{out + off[i], part_bytes[i], false};
  };
  std::vector<TcpStream> streams;
  if (!ring) {
    streams.reserve(2 * n);
    for (int j = 0; j < n; ++j) {
      if (j == rank_) continue;
      streams.push_back(Stream(j, true, {part(rank_)}));
      streams.push_back(Stream(j, false, {part(j)}));
    }
    return Run(streams, nullptr, what);
  }
  streams.resize(2);
  TcpStream& send = streams[0];
  TcpStream& recv = streams[1];
  send.peer = (rank_ + 1) % n;
  send.send = true;
  recv.peer = (rank_ - 1 + n) % n;
  for (int j = 0; j < n - 1; ++j) {
    send.pieces.push_back(part(rank_ - j));
    recv.pieces.push_back(part(rank_ - 1 - j));
  }
  send.ready = part_bytes[rank_];
  send.source = &recv;
  return Run(streams, nullptr, what);
}

Status TcpAlgorithms::Broadcast(char* buf, size_t bytes, int root, bool chain,
                                const std::string& what) {
  const int n = size_;
  std::vector<TcpStream> streams;
  if (!chain) {
    if (rank_ != root) {
      streams.push_back(Stream(root, false, {{buf, bytes, false}}));
    } else {
      for (int j = 0; j < n; ++j) {
        if (j != root) streams.push_back(Stream(j, true, {{buf, bytes, false}}));
      }
    }
    return Run(streams, nullptr, what);
  }
  // A pipelined chain root -> root+1 -> ...: each rank forwards what has arrived.
  const int pos = (rank_ - root + n) % n;
  streams.reserve(2);
  if (pos > 0) streams.push_back(Stream((rank_ - 1 + n) % n, false, {{buf, bytes, false}}));
  if (pos < n - 1) {
    streams.push_back(Stream((rank_ + 1) % n, true, {{buf, bytes, false}}));
    if (pos > 0) {
      streams.back().ready = 0;
      streams.back().source = &streams[0];
    }
  }
  return Run(streams, nullptr, what);
}

Status TcpAlgorithms::Alltoallv(const char* in, const std::vector<size_t>& send_bytes, char* out,
                                const std::vector<size_t>& recv_bytes, const std::string& what) {
  const std::vector<size_t> soff = Offsets(send_bytes);
  const std::vector<size_t> roff = Offsets(recv_bytes);
  const size_t self = std::min(send_bytes[rank_], recv_bytes[rank_]);
  if (self > 0 && out + roff[rank_] != in + soff[rank_]) {
    std::memmove(out + roff[rank_], in + soff[rank_], self);
  }
  std::vector<TcpStream> streams;
  streams.reserve(2 * size_);
  for (int j = 0; j < size_; ++j) {
    if (j == rank_) continue;
    streams.push_back(Stream(j, true, {{const_cast<char*>(in) + soff[j], send_bytes[j], false}}));
    streams.push_back(Stream(j, false, {{out + roff[j], recv_bytes[j], false}}));
  }
  return Run(streams, nullptr, what);
}

Status TcpAlgorithms::GatherBytes(const std::string& in, int root, std::vector<std::string>* out,
                                  const std::string& what) {
  std::vector<TcpStream> streams;
  uint8_t header[8];
  if (rank_ != root) {
    EncodeLength(in.size(), header);
    streams.push_back(Stream(root, true,
                             {{reinterpret_cast<char*>(header), 8, false},
                              {const_cast<char*>(in.data()), in.size(), false}}));
    return Run(streams, nullptr, what);
  }
  out->assign(size_, std::string());
  (*out)[root] = in;
  streams.reserve(size_);
  for (int j = 0; j < size_; ++j) {
    if (j == root) continue;
    streams.push_back(Stream(j, false, {}));
    streams.back().grow = &(*out)[j];
  }
  return Run(streams, nullptr, what);
}

Status TcpAlgorithms::BroadcastBytes(std::string* data, int root, const std::string& what) {
  std::vector<TcpStream> streams;
  uint8_t header[8];
  if (rank_ != root) {
    streams.push_back(Stream(root, false, {}));
    streams.back().grow = data;
    return Run(streams, nullptr, what);
  }
  EncodeLength(data->size(), header);
  streams.reserve(size_);
  for (int j = 0; j < size_; ++j) {
    if (j == root) continue;
    streams.push_back(
        Stream(j, true,
               {{reinterpret_cast<char*>(header), 8, false}, {data->data(), data->size(), false}}));
  }
  return Run(streams, nullptr, what);
}

Status TcpAlgorithms::Barrier(const std::string& what) {
  char* slots = Scratch(size_);
  char token = 'b';
  std::vector<TcpStream> streams;
  streams.reserve(2 * size_);
  for (int j = 0; j < size_; ++j) {
    if (j == rank_) continue;
    streams.push_back(Stream(j, true, {{&token, 1, false}}));
    streams.push_back(Stream(j, false, {{slots + j, 1, false}}));
  }
  return Run(streams, nullptr, what);
}

}  // namespace hvd::runtime
