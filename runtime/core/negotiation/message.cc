#include "runtime/core/negotiation/message.h"

#include <cstdint>
#include <cstring>
#include <type_traits>

namespace hvd::runtime {
namespace {

// Layout: u8 version, then fields in declaration order. Integers and doubles are fixed-width
// little-endian (every supported host is little-endian; the version byte guards changes);
// strings and vectors are a u32 count followed by the elements.
// 2: the response list names the ranks that shut down; 3: a request list's shutdown its reason.
constexpr uint8_t kVersion = 3;
constexpr uint32_t kMaxCount = 1u << 26;  // sanity cap on any single count

class Writer {
 public:
  template <typename T>
  void Put(T v) {
    static_assert(std::is_trivially_copyable_v<T>);
    out_.append(reinterpret_cast<const char*>(&v), sizeof(T));
  }
  void PutString(const std::string& s) {
    Put<uint32_t>(static_cast<uint32_t>(s.size()));
    out_.append(s);
  }
  template <typename T>
  void PutVector(const std::vector<T>& v) {
    Put<uint32_t>(static_cast<uint32_t>(v.size()));
    for (const T& x : v) Put<T>(x);
  }
  std::string Take() { return std::move(out_); }

 private:
  std::string out_;
};

class Reader {
 public:
  explicit Reader(const std::string& in) : in_(in) {}

  template <typename T>
  bool Get(T* v) {
    if (in_.size() - pos_ < sizeof(T)) return Fail();
    std::memcpy(v, in_.data() + pos_, sizeof(T));
    pos_ += sizeof(T);
    return true;
  }
  bool GetCount(uint32_t* n, size_t min_elem_bytes) {
    if (!Get(n)) return false;
    if (*n > kMaxCount || static_cast<uint64_t>(*n) * min_elem_bytes > in_.size() - pos_) {
      return Fail();
    }
    return true;
  }
  bool GetString(std::string* s) {
    uint32_t n;
    if (!GetCount(&n, 1)) return false;
    s->assign(in_.data() + pos_, n);
    pos_ += n;
    return true;
  }
  template <typename T>
  bool GetVector(std::vector<T>* v) {
    uint32_t n;
    if (!GetCount(&n, sizeof(T))) return false;
    v->resize(n);
    for (uint32_t i = 0; i < n; ++i) {
      if (!Get(&(*v)[i])) return false;
    }
    return true;
  }
  template <typename E>
  bool GetEnum(E* e, int32_t max) {
    int32_t raw;
    if (!Get(&raw) || raw < 0 || raw > max) return Fail();
    *e = static_cast<E>(raw);
    return true;
  }
  bool done() const { return ok_ && pos_ == in_.size(); }

 private:
  bool Fail() {
    ok_ = false;
    return false;
  }
  const std::string& in_;
  size_t pos_ = 0;
  bool ok_ = true;
};

void PutRequest(Writer* w, const Request& r) {
  w->Put<int32_t>(r.rank);
  w->Put<int32_t>(static_cast<int32_t>(r.type));
  w->PutString(r.name);
  w->Put<int32_t>(static_cast<int32_t>(r.dtype));
  w->PutVector(r.shape);
  w->Put<int32_t>(r.root);
  w->Put<int32_t>(static_cast<int32_t>(r.reduce_op));
  w->Put<double>(r.prescale);
  w->Put<double>(r.postscale);
  w->Put<int32_t>(r.device);
  w->PutString(r.group);
  w->Put<int32_t>(r.group_size);
  w->PutVector(r.args);
}

bool GetRequest(Reader* rd, Request* r) {
  return rd->Get(&r->rank) && rd->GetEnum(&r->type, kMaxOpType) && rd->GetString(&r->name) &&
         rd->GetEnum(&r->dtype, static_cast<int32_t>(DataType::kBFloat16)) &&
         rd->GetVector(&r->shape) && rd->Get(&r->root) &&
         rd->GetEnum(&r->reduce_op, static_cast<int32_t>(ReduceOp::kProduct)) &&
         rd->Get(&r->prescale) && rd->Get(&r->postscale) && rd->Get(&r->device) &&
         rd->GetString(&r->group) && rd->Get(&r->group_size) && rd->GetVector(&r->args);
}

void PutResponse(Writer* w, const Response& r) {
  w->Put<int32_t>(static_cast<int32_t>(r.type));
  w->Put<uint32_t>(static_cast<uint32_t>(r.names.size()));
  for (const auto& n : r.names) w->PutString(n);
  w->PutString(r.error);
  w->Put<int32_t>(static_cast<int32_t>(r.dtype));
  w->Put<int32_t>(static_cast<int32_t>(r.reduce_op));
  w->Put<double>(r.prescale);
  w->Put<double>(r.postscale);
  w->Put<int32_t>(r.root);
  w->Put<int32_t>(r.device);
  w->PutString(r.group);
  w->PutVector(r.sizes);
  w->PutVector(r.row_elements);
  w->PutVector(r.even_alltoall_rows);
  w->Put<int32_t>(r.last_joined_rank);
}

bool GetResponse(Reader* rd, Response* r) {
  uint32_t n;
  if (!rd->GetEnum(&r->type, kMaxOpType) || !rd->GetCount(&n, 4)) return false;
  r->names.clear();
  for (uint32_t i = 0; i < n; ++i) {
    if (!rd->GetString(&r->names.Next())) return false;
  }
  return rd->GetString(&r->error) &&
         rd->GetEnum(&r->dtype, static_cast<int32_t>(DataType::kBFloat16)) &&
         rd->GetEnum(&r->reduce_op, static_cast<int32_t>(ReduceOp::kProduct)) &&
         rd->Get(&r->prescale) && rd->Get(&r->postscale) && rd->Get(&r->root) &&
         rd->Get(&r->device) && rd->GetString(&r->group) && rd->GetVector(&r->sizes) &&
         rd->GetVector(&r->row_elements) && rd->GetVector(&r->even_alltoall_rows) &&
         rd->Get(&r->last_joined_rank);
}

Status Malformed(const char* what, size_t bytes) {
  return Status::InvalidArgument(std::string("malformed ") + what + " (" + std::to_string(bytes) +
                                 " bytes)");
}

}  // namespace

const char* OpTypeName(OpType type) {
  switch (type) {
    case OpType::kAllreduce:
      return "allreduce";
    case OpType::kAllgather:
      return "allgather";
    case OpType::kBroadcast:
      return "broadcast";
    case OpType::kAlltoall:
      return "alltoall";
    case OpType::kReducescatter:
      return "reducescatter";
    case OpType::kBarrier:
      return "barrier";
    case OpType::kJoin:
      return "join";
    case OpType::kProcessSetAdd:
      return "add_process_set";
    case OpType::kProcessSetRemove:
      return "remove_process_set";
    case OpType::kError:
      return "error";
  }
  return "unknown";
}

void Request::Clear() {
  rank = 0;
  type = OpType::kAllreduce;
  name.clear();
  dtype = DataType::kFloat32;
  shape.clear();
  root = 0;
  reduce_op = ReduceOp::kSum;
  prescale = 1.0;
  postscale = 1.0;
  device = -1;
  group.clear();
  group_size = 0;
  args.clear();
}

int64_t Request::NumElements() const {
  int64_t n = 1;
  for (int64_t d : shape) n *= d;
  return n;
}

std::string EncodeRequestList(const RequestList& list) {
  Writer w;
  w.Put<uint8_t>(kVersion);
  w.Put<uint8_t>(list.shutdown ? 1 : 0);
  if (list.shutdown) w.PutString(list.shutdown_reason);
  w.Put<uint32_t>(static_cast<uint32_t>(list.requests.size()));
  for (const auto& r : list.requests) PutRequest(&w, r);
  return w.Take();
}

Result<RequestList> DecodeRequestList(const std::string& bytes) {
  Reader rd(bytes);
  uint8_t version = 0, shutdown = 0;
  uint32_t n = 0;
  RequestList list;
  if (!rd.Get(&version) || version != kVersion || !rd.Get(&shutdown) || shutdown > 1 ||
      (shutdown != 0 && !rd.GetString(&list.shutdown_reason)) || !rd.GetCount(&n, 16)) {
    return Malformed("request list", bytes.size());
  }
  list.shutdown = shutdown != 0;
  list.requests.resize(n);
  for (auto& r : list.requests) {
    if (!GetRequest(&rd, &r)) return Malformed("request list", bytes.size());
  }
  if (!rd.done()) return Malformed("request list", bytes.size());
  return list;
}

std::string EncodeResponseList(const ResponseList& list) {
  Writer w;
  w.Put<uint8_t>(kVersion);
  w.Put<uint8_t>(list.shutdown ? 1 : 0);
  w.PutString(list.shutdown_reason);
  w.PutVector(list.shutdown_ranks);
  w.Put<uint32_t>(static_cast<uint32_t>(list.responses.size()));
  for (const auto& r : list.responses) PutResponse(&w, r);
  return w.Take();
}

Result<ResponseList> DecodeResponseList(const std::string& bytes) {
  Reader rd(bytes);
  uint8_t version = 0, shutdown = 0;
  uint32_t n = 0;
  ResponseList list;
  if (!rd.Get(&version) || version != kVersion || !rd.Get(&shutdown) ||
      !rd.GetString(&list.shutdown_reason) || !rd.GetVector(&list.shutdown_ranks) ||
      !rd.GetCount(&n, 16)) {
    return Malformed("response list", bytes.size());
  }
  list.shutdown = shutdown != 0;
  list.responses.resize(n);
  for (auto& r : list.responses) {
    if (!GetResponse(&rd, &r)) return Malformed("response list", bytes.size());
  }
  if (!rd.done()) return Malformed("response list", bytes.size());
  return list;
}

namespace {

bool CountsFit(std::span<const int64_t> counts, int64_t each = 1) {
  return FirstCountBeyond(counts, each) < 0;
}

std::string CheckResponse(const Response& r, int set_size) {
  if (r.names.empty()) return "no tensor names";
  const size_t names = r.names.size();
  const size_t members = static_cast<size_t>(set_size);
  switch (r.type) {
    case OpType::kAllgather: {
      if (r.sizes.size() != names * members || r.row_elements.size() != names) {
        return "not one first dimension per tensor and member and one row size per tensor";
      }
      if (!CountsFit(r.row_elements)) return "row sizes out of range";
      for (size_t i = 0; i < names; ++i) {
        if (!CountsFit(std::span(r.sizes).subspan(i * members, members), r.row_elements[i])) {
          return "sizes out of range";
        }
      }
      return "";
    }
    case OpType::kAllreduce:
    case OpType::kBroadcast:
    case OpType::kAlltoall:
    case OpType::kReducescatter:
      if (r.sizes.size() != names) return "not one size per tensor";
      if (!CountsFit(r.sizes)) return "sizes out of range";
      if (!r.even_alltoall_rows.empty() &&
          (r.even_alltoall_rows.size() != members || !CountsFit(r.even_alltoall_rows))) {
        return "not one first dimension per member";
      }
      if (r.type == OpType::kBroadcast && (r.root < 0 || r.root >= set_size)) {
        return "root rank " + std::to_string(r.root) + " out of range";
      }
      return "";
    case OpType::kJoin:
      if (r.last_joined_rank < -1 || r.last_joined_rank >= set_size) {
        return "last joined rank " + std::to_string(r.last_joined_rank) + " out of range";
      }
      return "";
    case OpType::kProcessSetAdd:
      for (int64_t rank : r.sizes) {
        if (rank < 0 || rank >= set_size) return "process set rank out of range";
      }
      return "";
    case OpType::kProcessSetRemove:
      if (r.sizes.size() != 1 || r.sizes[0] < 0 || r.sizes[0] > INT32_MAX) {
        return "not one process set id";
      }
      return "";
    case OpType::kBarrier:
    case OpType::kError:
      return "";
  }
  return "unknown type";
}

}  // namespace

int FirstCountBeyond(std::span<const int64_t> counts, int64_t each) {
  int64_t total = 0, elements = 0;
  for (size_t k = 0; k < counts.size(); ++k) {
    if (counts[k] < 0 || __builtin_add_overflow(total, counts[k], &total) ||
        total > kMaxTensorElements || __builtin_mul_overflow(total, each, &elements) ||
        elements > kMaxTensorElements) {
      return static_cast<int>(k);
    }
  }
  return -1;
}

Status CheckResponseList(const ResponseList& list, int set_size) {
  for (size_t i = 0; i < list.responses.size(); ++i) {
    const Response& r = list.responses[i];
    const std::string problem = CheckResponse(r, set_size);
    if (!problem.empty()) {
      return Status::InvalidArgument(
          "malformed response list: response " + std::to_string(i) + " (" + OpTypeName(r.type) +
          (r.names.empty() ? std::string() : " of '" + r.names[0] + "'") + "): " + problem);
    }
  }
  return Status::OK();
}

}  // namespace hvd::runtime
