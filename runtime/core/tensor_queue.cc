#include "runtime/core/tensor_queue.h"

#include <tuple>

namespace hvd::runtime {

const char kDuplicateNameError[] =
    "Requested to allreduce, allgather, or broadcast a tensor with the same name as another "
    "tensor that is currently being processed.  If you want to request another tensor, use a "
    "different tensor name.";

Status TensorQueue::Add(std::span<const TensorEntry> entries) {
  std::lock_guard<std::mutex> lock(mu_);
  if (!closed_.ok()) return closed_;
  for (size_t i = 0; i < entries.size(); ++i) {
    const TensorEntry& e = entries[i];
    Table::iterator it;
    bool inserted;
    if (spare_.empty()) {
      std::tie(it, inserted) = table_.try_emplace(e.request.name);
    } else {
      Table::node_type node = std::move(spare_.back());
      spare_.pop_back();
      node.key() = e.request.name;
      auto result = table_.insert(std::move(node));
      it = result.position;
      inserted = result.inserted;
      if (!inserted) spare_.push_back(std::move(result.node));
    }
    if (!inserted) {
      // The earlier op has run (or is running) and its handle is not released: the usual
      // cause is a handle never synchronized, which Horovod would have let go (docs/python.md).
      const std::string why =
          it->second.taken ? "; an earlier op under this name has run but its handle was never "
                             "synchronized, and hvd keeps the name reserved until it is"
                           : "";
      // All or nothing: the entries before this one leave again.
      for (size_t j = i; j-- > 0;) {
        spare_.push_back(table_.extract(entries[j].request.name));
        fresh_.pop_back();
      }
      return Status::InvalidArgument(std::string(kDuplicateNameError) + " (tensor '" +
                                     e.request.name + "'" + why + ")");
    }
    Slot& slot = it->second;
    slot.entry = e;  // into the recycled node's buffers (a swap of entries costs more)
    slot.taken = false;
    fresh_.push_back(&slot.entry.request);
  }
  pending_.fetch_add(entries.size(), std::memory_order_release);
  return Status::OK();
}

void TensorQueue::PopRequests(std::vector<const Request*>* out) {
  std::lock_guard<std::mutex> lock(mu_);
  out->insert(out->end(), fresh_.begin(), fresh_.end());
  fresh_.clear();
}

TensorEntry* TensorQueue::Take(const std::string& name) {
  std::lock_guard<std::mutex> lock(mu_);
  return TakeLocked(name);
}

std::vector<TensorEntry> TensorQueue::TakeAll(const Status& close) {
  std::lock_guard<std::mutex> lock(mu_);
  if (!close.ok()) closed_ = close;
  std::vector<TensorEntry> all;
  for (auto& [name, slot] : table_) {
    if (slot.taken) continue;
    slot.taken = true;
    all.push_back(slot.entry);
  }
  pending_.store(0, std::memory_order_release);
  fresh_.clear();
  return all;
}

}  // namespace hvd::runtime
