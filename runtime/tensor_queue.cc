#include "runtime/tensor_queue.h"

namespace hvd::runtime {

const char kDuplicateNameError[] =
    "Requested to allreduce, allgather, or broadcast a tensor with the same name as another "
    "tensor that is currently being processed.  If you want to request another tensor, use a "
    "different tensor name.";

Status TensorQueue::Add(std::vector<TensorEntry> entries) {
  std::lock_guard<std::mutex> lock(mu_);
  for (size_t i = 0; i < entries.size(); ++i) {
    const std::string& name = entries[i].request.name;
    bool repeated = false;
    for (size_t j = 0; j < i; ++j) repeated |= entries[j].request.name == name;
    if (repeated || table_.count(name) != 0) {
      return Status::InvalidArgument(std::string(kDuplicateNameError) + " (tensor '" + name + "')");
    }
  }
  for (auto& e : entries) {
    fresh_.push_back(e.request);
    std::string name = e.request.name;
    table_.emplace(std::move(name), std::move(e));
  }
  return Status::OK();
}

void TensorQueue::PopRequests(std::vector<Request>* out) {
  std::lock_guard<std::mutex> lock(mu_);
  for (auto& r : fresh_) out->push_back(std::move(r));
  fresh_.clear();
}

std::optional<TensorEntry> TensorQueue::Take(const std::string& name) {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = table_.find(name);
  if (it == table_.end()) return std::nullopt;
  TensorEntry e = std::move(it->second);
  table_.erase(it);
  return e;
}

std::vector<TensorEntry> TensorQueue::TakeAll() {
  std::lock_guard<std::mutex> lock(mu_);
  std::vector<TensorEntry> all;
  all.reserve(table_.size());
  for (auto& [name, e] : table_) all.push_back(std::move(e));
  table_.clear();
  fresh_.clear();
  return all;
}

size_t TensorQueue::size() const {
  std::lock_guard<std::mutex> lock(mu_);
  return table_.size();
}

}  // namespace hvd::runtime
