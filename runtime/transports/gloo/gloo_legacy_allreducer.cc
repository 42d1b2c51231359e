#include "runtime/transports/gloo/gloo_legacy_allreducer.h"

#include <gloo/allreduce_halving_doubling.h>
#include <gloo/allreduce_ring.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <utility>

namespace hvd::runtime {
// Not in an anonymous namespace: RingEntry (external linkage) holds one, which gcc refuses
// (-Wsubobject-linkage) where this file is not the main file: in a unity batch.
namespace gloo_legacy {

// AllreduceRing whose local pointer can be swapped between runs (ptrs_ is protected and only
// read inside run()).
template <typename S>
class RebindableRing final : public gloo::AllreduceRing<S> {
 public:
  using gloo::AllreduceRing<S>::AllreduceRing;
  void Bind(S* buffer) { this->ptrs_[0] = buffer; }

  // run() never waits for its "ready for your next write" notifications to leave; gloo may
  // still hold the last one queued for its event loop. A process that tears down (or exits)
  // right after its final op would drop it, failing the peer's last op with "connection
  // closed". Waiting for every notification of this run closes that window; each is usually
  // already written, so this costs nothing.
  void RunAndFlush() {
    this->run();
    for (int i = 1; i < this->contextSize_; ++i) this->sendNotificationBuf_->waitSend();
  }
};

}  // namespace gloo_legacy

template <typename S>
struct GlooLegacyAllreducer::RingEntry final : Entry {
  RingEntry(const std::shared_ptr<gloo::Context>& context, S* buffer, size_t n,
            const gloo::ReductionFunction<S>* reduction)
      : ring(context, std::vector<S*>{buffer}, static_cast<int>(n), reduction) {
    count = n;
    width = sizeof(S);
    fn = reduction;
  }
  void Run(void* buffer) override {
    ring.Bind(static_cast<S*>(buffer));
    ring.RunAndFlush();
  }
  gloo_legacy::RebindableRing<S> ring;
};

template <typename S>
struct GlooLegacyAllreducer::HalvingDoublingEntry final : Entry {
  HalvingDoublingEntry(const std::shared_ptr<gloo::Context>& context, size_t n,
                       const gloo::ReductionFunction<S>* reduction)
      : scratch(n),
        algorithm(context, std::vector<S*>{scratch.data()}, static_cast<int>(n), reduction) {
    count = n;
    width = sizeof(S);
    fn = reduction;
  }
  void Run(void* buffer) override {
    std::memcpy(scratch.data(), buffer, count * sizeof(S));
    algorithm.run();
    std::memcpy(buffer, scratch.data(), count * sizeof(S));
  }
  std::vector<S> scratch;  // declared first: the algorithm binds to it
  gloo::AllreduceHalvingDoubling<S> algorithm;
};

GlooLegacyAllreducer::GlooLegacyAllreducer(std::shared_ptr<gloo::Context> context,
                                           size_t large_bytes)
    : context_(std::move(context)), large_bytes_(large_bytes) {
  small_.reserve(kMaxSmall + 1);
  large_.reserve(kMaxLarge + 1);
}

GlooLegacyAllreducer::~GlooLegacyAllreducer() {
  // gloo::Algorithm's destructor is noexcept(false); a broken pair must not escape here.
  for (auto* lru : {&small_, &large_}) {
    for (auto& entry : *lru) {
      try {
        entry.reset();
      } catch (...) {
      }
    }
  }
}

template <typename S>
GlooLegacyAllreducer::Entry* GlooLegacyAllreducer::Find(std::vector<std::unique_ptr<Entry>>* lru,
                                                        size_t count,
                                                        const gloo::ReductionFunction<S>* fn) {
  auto it = std::find_if(lru->begin(), lru->end(), [&](const auto& e) {
    return e->count == count && e->width == sizeof(S) && e->fn == fn;
  });
  if (it == lru->end()) return nullptr;
  if (it != lru->begin()) std::rotate(lru->begin(), it, it + 1);
  return lru->front().get();
}

template <typename S>
bool GlooLegacyAllreducer::Run(S* buffer, size_t count, const gloo::ReductionFunction<S>* fn) {
  // gloo's legacy AllreduceRing has every rank accumulate all buffers in its own ring order,
  // so with 3+ ranks floating-point sums differ in the last bits between ranks (weights would
  // drift apart). Halving-doubling reduces each chunk once and distributes it: bit-identical
  // everywhere. With 2 ranks a+b == b+a, so the cheaper ring is exact.
  const bool large =
      context_->size > 1 && (count * sizeof(S) >= large_bytes_ || context_->size > 2);
  std::vector<std::unique_ptr<Entry>>* lru = large ? &large_ : &small_;
  Entry* entry = Find<S>(lru, count, fn);
  const bool built = entry == nullptr;
  if (built) {
    if (large) {
      lru->insert(lru->begin(), std::make_unique<HalvingDoublingEntry<S>>(context_, count, fn));
    } else {
      lru->insert(lru->begin(), std::make_unique<RingEntry<S>>(context_, buffer, count, fn));
    }
    if (lru->size() > (large ? kMaxLarge : kMaxSmall)) lru->pop_back();
    entry = lru->front().get();
  }
  entry->Run(buffer);
  return built;
}

template bool GlooLegacyAllreducer::Run<uint8_t>(uint8_t*, size_t,
                                                 const gloo::ReductionFunction<uint8_t>*);
template bool GlooLegacyAllreducer::Run<uint16_t>(uint16_t*, size_t,
                                                  const gloo::ReductionFunction<uint16_t>*);
template bool GlooLegacyAllreducer::Run<uint32_t>(uint32_t*, size_t,
                                                  const gloo::ReductionFunction<uint32_t>*);
template bool GlooLegacyAllreducer::Run<uint64_t>(uint64_t*, size_t,
                                                  const gloo::ReductionFunction<uint64_t>*);

}  // namespace hvd::runtime
