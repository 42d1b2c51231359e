#ifndef HVD_RUNTIME_TRANSPORTS_GLOO_GLOO_LEGACY_ALLREDUCER_H_
#define HVD_RUNTIME_TRANSPORTS_GLOO_GLOO_LEGACY_ALLREDUCER_H_

#include <gloo/algorithm.h>
#include <gloo/context.h>

#include <cstddef>
#include <memory>
#include <vector>

namespace hvd::runtime {

// GlooLegacyAllreducer runs in-place allreduces with gloo's legacy algorithm classes, which
// cost the least per message in Debian's libgloo over tcp (pre-bound transport buffers, no
// per-message rendezvous): the communicator's allreduces below 2 MiB and its reduce-scatters
// below 256 KiB come here (gloo_communicator.h; larger ones take unbound buffers pairwise):
//   - below large_bytes: gloo::AllreduceRing. It touches the caller's pointer only locally
//     (its transport buffers are its own inbox/outbox), so one instance is rebound to each
//     call's buffer: no copy, no allocation.
//   - from large_bytes: gloo::AllreduceHalvingDoubling, whose transport buffers are bound to
//     its pointer, so it runs on an owned scratch buffer (copy in, run, copy out).
// Instances are cached by (count, element width, reduction) in small LRUs (at most kMaxSmall
// rings, kMaxLarge halving-doubling instances with their scratch). Constructing one draws
// transport slots from the context, so every rank must construct and evict in the same order:
// the keys depend only on arguments that match across ranks, never on addresses.
//
// Not thread-safe: used by the communicator's single calling thread. Run() throws whatever
// gloo throws (the communicator translates).
class GlooLegacyAllreducer {
 public:
  GlooLegacyAllreducer(std::shared_ptr<gloo::Context> context, size_t large_bytes);
  ~GlooLegacyAllreducer();

  // Returns true when this run built a new instance (its first run on its transport pairs).
  template <typename S>
  bool Run(S* buffer, size_t count, const gloo::ReductionFunction<S>* fn);

 private:
  struct Entry {
    virtual ~Entry() noexcept(false) = default;  // gloo::Algorithm's destructor may throw
    virtual void Run(void* buffer) = 0;
    size_t count = 0;
    size_t width = 0;
    const void* fn = nullptr;
  };
  template <typename S>
  struct RingEntry;
  template <typename S>
  struct HalvingDoublingEntry;

  static constexpr size_t kMaxSmall = 32;
  static constexpr size_t kMaxLarge = 4;

  template <typename S>
  Entry* Find(std::vector<std::unique_ptr<Entry>>* lru, size_t count,
              const gloo::ReductionFunction<S>* fn);

  std::shared_ptr<gloo::Context> context_;
  const size_t large_bytes_;
  std::vector<std::unique_ptr<Entry>> small_;  // most recently used first
  std::vector<std::unique_ptr<Entry>> large_;
};

}  // namespace hvd::runtime

#endif  // HVD_RUNTIME_TRANSPORTS_GLOO_GLOO_LEGACY_ALLREDUCER_H_
