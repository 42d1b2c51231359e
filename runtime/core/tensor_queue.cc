#include "runtime/core/tensor_queue.h"

namespace hvd::runtime {

const char kDuplicateNameError[] =
    "Requested to allreduce, allgather, or broadcast a tensor with the same name as another "
    "tensor that is currently being processed.  If you want to request another tensor, use a "
    "different tensor name.";

Status TensorQueue::Add(std::span<const TensorEntry> entries) {
  std::lock_guard<std::mutex> lock(mu_);
  for (size_t i = 0; i < entries.size(); ++i) {
    const std::string& name = entries[i].request.name;
    bool repeated = false;
    for (size_t j = 0; j < i; ++j) repeated |= entries[j].request.name == name;
    if (repeated || reserved_.count(name) != 0) {
      return Status::InvalidArgument(std::string(kDuplicateNameError) + " (tensor '" + name + "')");
    }
  }
  for (const TensorEntry& e : entries) {
    Table::iterator it;
    if (spare_.empty()) {
      it = table_.emplace(e.request.name, e).first;
    } else {
      Taken node = std::move(spare_.back());
      spare_.pop_back();
      node.key() = e.request.name;
      node.mapped() = e;
      it = table_.insert(std::move(node)).position;
    }
    fresh_.push_back(&it->second.request);
    size_.store(table_.size(), std::memory_order_release);
    if (spare_names_.empty()) {
      reserved_.insert(e.request.name);
    } else {
      Names::node_type node = std::move(spare_names_.back());
      spare_names_.pop_back();
      node.value() = e.request.name;
      reserved_.insert(std::move(node));
    }
  }
  return Status::OK();
}

void TensorQueue::PopRequests(std::vector<const Request*>* out) {
  std::lock_guard<std::mutex> lock(mu_);
  out->insert(out->end(), fresh_.begin(), fresh_.end());
  fresh_.clear();
}

TensorQueue::Taken TensorQueue::Take(const std::string& name) {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = table_.find(name);
  if (it == table_.end()) return {};
  Taken taken = table_.extract(it);
  size_.store(table_.size(), std::memory_order_release);
  return taken;
}

void TensorQueue::Recycle(std::vector<Taken>* taken) {
  std::lock_guard<std::mutex> lock(mu_);
  for (Taken& node : *taken) {
    if (!node.empty()) spare_.push_back(std::move(node));
  }
  taken->clear();
}

std::vector<TensorEntry> TensorQueue::TakeAll() {
  std::lock_guard<std::mutex> lock(mu_);
  std::vector<TensorEntry> all;
  all.reserve(table_.size());
  for (auto& [name, e] : table_) all.push_back(std::move(e));
  table_.clear();
  size_.store(0, std::memory_order_release);
  fresh_.clear();
  return all;
}

}  // namespace hvd::runtime
