// Cross-rank mismatches (Horovod's messages, its ConstructResponse) and the duplicate in-flight
// name. Rank 0's request is the "one rank" of a message and rank 1's the "another rank".
#include <chrono>
#include <cmath>
#include <cstdint>
#include <memory>
#include <thread>

#include "scenarios.h"

namespace hvd_e2e {
namespace {

// One mismatch: `enqueue` starts this rank's (deliberately different) op on the handle.
struct MismatchCase {
  std::string name;
  std::string message;  // expected on every rank
  std::function<hvd_status_t(const hvd_op_options_t&, hvd_handle_t*)> enqueue;
};

// Allreduce/broadcast/etc. of a fresh float32-or-given tensor; the tensor lives in `keep`.
std::vector<std::shared_ptr<Tensor>>& Keep() {
  static std::vector<std::shared_ptr<Tensor>> keep;
  return keep;
}

hvd_tensor_t NewTensor(hvd_dtype_t dtype, std::vector<int64_t> shape) {
  Keep().push_back(std::make_shared<Tensor>(dtype, std::move(shape)));
  Keep().back()->Fill(1);
  return Keep().back()->Desc();
}

hvd_status_t StartAllreduce(hvd_dtype_t dtype, std::vector<int64_t> shape, hvd_op_options_t o,
                            hvd_handle_t* h) {
  hvd_tensor_t t = NewTensor(dtype, std::move(shape));
  return hvd_allreduce(&t, &t, &o, h);
}

hvd_status_t StartBroadcast(std::vector<int64_t> shape, hvd_op_options_t o, hvd_handle_t* h) {
  hvd_tensor_t t = NewTensor(HVD_FLOAT32, std::move(shape));
  return hvd_broadcast(&t, &t, &o, h);
}

std::vector<MismatchCase> Cases() {
  const bool first = R() == 0;
  std::vector<MismatchCase> cases;
  cases.push_back(
      {"op",
       "Mismatched operations: One rank did an allreduce, while another rank did an broadcast.",
       [first](const hvd_op_options_t& o, hvd_handle_t* h) {
         return first ? StartAllreduce(HVD_FLOAT32, {4}, o, h) : StartBroadcast({4}, o, h);
       }});
  cases.push_back(
      {"dtype",
       "Mismatched data types: One rank had type float32, but another rank had type int32.",
       [first](const hvd_op_options_t& o, hvd_handle_t* h) {
         return StartAllreduce(first ? HVD_FLOAT32 : HVD_INT32, {4}, o, h);
       }});
  cases.push_back({"allreduce shape",
                   "Mismatched allreduce tensor shapes: One rank sent a tensor of shape [2], but "
                   "another rank sent a tensor of shape [3].",
                   [](const hvd_op_options_t& o, hvd_handle_t* h) {
                     return StartAllreduce(HVD_FLOAT32, {R() + 2}, o, h);
                   }});
  cases.push_back({"broadcast shape",
                   "Mismatched broadcast tensor shapes: One rank sent a tensor of shape [2, 1], "
                   "but another rank sent a tensor of shape [2, 2].",
                   [](const hvd_op_options_t& o, hvd_handle_t* h) {
                     return StartBroadcast({2, R() + 1}, o, h);
                   }});
  cases.push_back({"reducescatter shape",
                   "Mismatched reducescatter tensor shapes: One rank sent a tensor of shape [4], "
                   "but another rank sent a tensor of shape [5].",
                   [](const hvd_op_options_t& o, hvd_handle_t* h) {
                     hvd_tensor_t t = NewTensor(HVD_FLOAT32, {R() + 4});
                     return hvd_reducescatter(&t, &o, h);
                   }});
  cases.push_back({"allgather dimension",
                   "Mismatched allgather tensor shapes: One rank sent a tensor with dimension 1 "
                   "equal to 1, but another rank sent a tensor with dimension 1 equal to 2.",
                   [](const hvd_op_options_t& o, hvd_handle_t* h) {
                     hvd_tensor_t t = NewTensor(HVD_FLOAT32, {2, R() + 1});
                     return hvd_allgather(&t, &o, h);
                   }});
  cases.push_back({"allgather rank",
                   "Mismatched allgather tensor shapes: One rank sent a tensor of rank 1, but "
                   "another rank sent a tensor of rank 2.",
                   [first](const hvd_op_options_t& o, hvd_handle_t* h) {
                     hvd_tensor_t t = NewTensor(
                         HVD_FLOAT32, first ? std::vector<int64_t>{2} : std::vector<int64_t>{2, 1});
                     return hvd_allgather(&t, &o, h);
                   }});
  cases.push_back({"alltoall dimension",
                   "Mismatched alltoall tensor shapes: One rank sent a tensor with dimension 1 "
                   "equal to 1, but another rank sent a tensor with dimension 1 equal to 2.",
                   [](const hvd_op_options_t& o, hvd_handle_t* h) {
                     hvd_tensor_t t = NewTensor(HVD_FLOAT32, {N(), R() + 1});
                     return hvd_alltoall(&t, &o, h);
                   }});
  cases.push_back({"broadcast root",
                   "Mismatched broadcast root ranks: One rank specified root rank 0, but another "
                   "rank specified root rank 1.",
                   [first](hvd_op_options_t o, hvd_handle_t* h) {
                     o.root_rank = first ? 0 : 1;
                     return StartBroadcast({3}, o, h);
                   }});
  cases.push_back({"prescale",
                   "Mismatched prescale factors: One rank sent factor 1, but another rank sent "
                   "factor 2.",
                   [first](hvd_op_options_t o, hvd_handle_t* h) {
                     o.prescale_factor = first ? 1.0 : 2.0;
                     return StartAllreduce(HVD_FLOAT32, {4}, o, h);
                   }});
  cases.push_back({"postscale",
                   "Mismatched postscale factors: One rank sent factor 0.5, but another rank sent "
                   "factor 1.",
                   [first](hvd_op_options_t o, hvd_handle_t* h) {
                     o.postscale_factor = first ? 0.5 : 1.0;
                     return StartAllreduce(HVD_FLOAT64, {4}, o, h);
                   }});
  cases.push_back({"allreduce reduce op",
                   "Mismatched reduction operations: One rank requested Sum, but another rank "
                   "requested Max.",
                   [first](hvd_op_options_t o, hvd_handle_t* h) {
                     o.reduce_op = first ? HVD_OP_SUM : HVD_OP_MAX;
                     return StartAllreduce(HVD_INT32, {4}, o, h);
                   }});
  cases.push_back({"reducescatter reduce op",
                   "Mismatched reduction operations: One rank requested Sum, but another rank "
                   "requested Average.",
                   [first](hvd_op_options_t o, hvd_handle_t* h) {
                     o.reduce_op = first ? HVD_OP_SUM : HVD_OP_AVERAGE;
                     hvd_tensor_t t = NewTensor(HVD_FLOAT32, {2 * N()});
                     return hvd_reducescatter(&t, &o, h);
                   }});
  cases.push_back({"rank-zero allgather", "Rank zero tried to allgather a rank-zero tensor.",
                   [](const hvd_op_options_t& o, hvd_handle_t* h) {
                     hvd_tensor_t t = NewTensor(HVD_FLOAT32, {});
                     return hvd_allgather(&t, &o, h);
                   }});
  cases.push_back(
      {"grouped allreduce member shape",
       "Mismatched allreduce tensor shapes: One rank sent a tensor of shape [1], but "
       "another rank sent a tensor of shape [2].",
       [](const hvd_op_options_t& o, hvd_handle_t* h) {
         hvd_tensor_t t[2] = {NewTensor(HVD_FLOAT32, {3}), NewTensor(HVD_FLOAT32, {R() + 1})};
         return hvd_grouped_allreduce(t, t, 2, &o, h);
       }});
  return cases;
}

}  // namespace

void Mismatch() {
  int k = 0;
  for (const MismatchCase& c : Cases()) {
    const std::string what = "mismatched " + c.name;
    hvd_handle_t h = 0;
    Require(c.enqueue(Options("mismatch." + std::to_string(k)), &h), what + ": enqueue");
    const std::string message = WaitFailure(h, HVD_REMOTE_ERROR, what);
    if (message != c.message) {
      Fail(what + ": expected message '" + c.message + "', got '" + message + "'");
    }
    // The same message on every rank.
    const std::vector<std::string> all =
        GatherStrings(message, "mismatch.messages." + std::to_string(k));
    for (size_t r = 0; r < all.size(); ++r) {
      if (all[r] != message) {
        Fail(what + ": rank " + std::to_string(r) + " got message '" + all[r] + "', this rank '" +
             message + "'");
      }
    }
    if (static_cast<int32_t>(all.size()) != N()) {
      Fail(what + ": gathered " + std::to_string(all.size()) + " messages for " +
           std::to_string(N()) + " ranks");
    }
    // The runtime is still usable, and the failed name can be used again.
    SumAllreduce("mismatch." + std::to_string(k), 1, N());
    ++k;
  }
  Keep().clear();
}

void DuplicateName() {
  // Rank 0 starts "dup"; the others start theirs only after rank 0's second attempt was
  // refused (they wait for its broadcast), so "dup" is certainly in flight on rank 0 then.
  Tensor x(HVD_FLOAT32, {5});
  x.Fill(R() + 1);
  hvd_tensor_t d = x.Desc();
  hvd_op_options_t o = Options("dup");
  hvd_handle_t first = 0;
  Tensor flag(HVD_INT32, {1});
  hvd_tensor_t f = flag.Desc();
  hvd_op_options_t go = Options("dup.go");
  hvd_handle_t go_handle = 0;
  const std::string prefix =
      "Requested to allreduce, allgather, or broadcast a tensor with the same name as another "
      "tensor that is currently being processed.";
  if (R() == 0) {
    Require(hvd_allreduce(&d, &d, &o, &first), "allreduce 'dup'");
    Tensor y(HVD_FLOAT32, {5});
    hvd_tensor_t yd = y.Desc();
    hvd_handle_t second = -7;
    hvd_status_t s = hvd_allreduce(&yd, &yd, &o, &second);
    const std::string message = s == HVD_OK ? "" : hvd_last_error();
    ExpectStatus(s, HVD_INVALID_ARGUMENT, "second allreduce 'dup' while the first is in flight");
    if (message.rfind(prefix, 0) != 0) {
      Fail("duplicate name: expected a message starting '" + prefix + "', got '" + message + "'");
    }
    if (second != -7) Fail("duplicate name: the refused call wrote a handle");
    // A different op with the same name is refused too.
    hvd_handle_t third = 0;
    ExpectStatus(hvd_broadcast(&yd, &yd, &o, &third), HVD_INVALID_ARGUMENT,
                 "broadcast 'dup' while allreduce 'dup' is in flight");
    int32_t done = 1;
    Require(hvd_poll(first, &done), "hvd_poll 'dup'");
    if (done) Fail("allreduce 'dup' completed before the other ranks submitted it");
    flag.Set(0, 1);
    Require(hvd_broadcast(&f, &f, &go, &go_handle), "broadcast 'dup.go'");
    WaitRelease(go_handle, "broadcast 'dup.go'");
  } else {
    Require(hvd_broadcast(&f, &f, &go, &go_handle), "broadcast 'dup.go'");
    WaitRelease(go_handle, "broadcast 'dup.go'");
    Require(hvd_allreduce(&d, &d, &o, &first), "allreduce 'dup'");
  }
  WaitRelease(first, "allreduce 'dup'");
  ExpectValues("allreduce 'dup'", x, std::vector<double>(5, N() * (N() + 1) / 2.0));
  // Once completed, the name is free again.
  SumAllreduce("dup", 2, 2.0 * N());
}

// Arguments refused on one rank only, and waits without a limit. An enqueue refused here must
// not take an unnamed op's number (the next unnamed op on every rank must get the same name and
// complete, not stall); sizes past 64 bits are refused naming the shape; hvd_wait(INFINITY)
// waits; a NaN timeout and a bad join device are refused.
void BadInput() {
  Tensor x(HVD_FLOAT32, {3});
  Tensor wrong(HVD_INT32, {3});
  hvd_tensor_t xd = x.Desc();
  hvd_tensor_t wd = wrong.Desc();
  hvd_op_options_t unnamed;
  hvd_op_options_init(&unnamed);
  hvd_handle_t h = 0;
  if (R() % 2 == 1) {  // refused on odd ranks only: output dtype differs from the input's
    if (hvd_allreduce(&xd, &wd, &unnamed, &h) != HVD_INVALID_ARGUMENT) {
      Fail("an allreduce with an int32 output of a float32 input was not refused");
    }
  }
  x.Fill(R() + 1);
  Require(hvd_allreduce(&xd, &xd, &unnamed, &h), "unnamed allreduce after a refused one");
  if (hvd_wait(h, 60.0) != HVD_OK) {
    Fail(std::string("unnamed allreduce after a refused one did not complete: ") +
         hvd_last_error());
  } else {
    ExpectValues("unnamed allreduce after a refused one", x,
                 std::vector<double>(3, N() * (N() + 1) / 2.0));
  }
  hvd_release(h);

  // 2^32 x 2^32 float32: the byte count overflows int64.
  hvd_tensor_t huge = xd;
  huge.ndim = 2;
  huge.shape[0] = int64_t{1} << 32;
  huge.shape[1] = int64_t{1} << 32;
  hvd_op_options_t o = Options("bad_input.huge");
  if (hvd_allreduce(&huge, &huge, &o, &h) != HVD_INVALID_ARGUMENT ||
      std::string(hvd_last_error()).find("64 bits") == std::string::npos) {
    Fail(std::string("a shape past 64 bits of bytes was not refused naming it: ") +
         hvd_last_error());
  }
  // The same with a zero dimension: a tensor of no element whose other dimensions overflow
  // (until 2026-12-02 the zero turned the check off, and rank 0 blamed another rank).
  huge.ndim = 3;
  huge.shape[0] = huge.shape[1] = int64_t{1} << 62;
  huge.shape[2] = 0;
  if (hvd_allreduce(&huge, &huge, &o, &h) != HVD_INVALID_ARGUMENT ||
      std::string(hvd_last_error()).find("has too many elements") == std::string::npos) {
    Fail(std::string("a zero-element shape whose other dimensions overflow was not refused: ") +
         hvd_last_error());
  }
  // A NaN or infinite scale factor, refused naming the op (a NaN on every rank failed rank 0's
  // comparison as a mismatch).
  for (double bad : {std::nan(""), static_cast<double>(INFINITY)}) {
    hvd_op_options_t scaled = Options("bad_input.scaled");
    scaled.postscale_factor = bad;
    if (hvd_allreduce(&xd, &xd, &scaled, &h) != HVD_INVALID_ARGUMENT ||
        std::string(hvd_last_error()).find("postscale factor") == std::string::npos ||
        std::string(hvd_last_error()).find("bad_input.scaled") == std::string::npos) {
      Fail(std::string("a postscale factor of ") + std::to_string(bad) +
           " was not refused naming it: " + hvd_last_error());
    }
  }
  // A negative split count, named (it was taken as 0), and an allreduce whose options carry a
  // dangling splits array never reads it.
  {
    hvd_op_options_t negative = Options("bad_input.negative_splits");
    int32_t splits[2] = {1, 2};
    negative.splits = splits;
    negative.num_splits = -3;
    if (hvd_alltoall(&xd, &negative, &h) != HVD_INVALID_ARGUMENT ||
        std::string(hvd_last_error()).find("num_splits -3") == std::string::npos) {
      Fail(std::string("an alltoall with num_splits -3 was not refused naming it: ") +
           hvd_last_error());
    }
    hvd_op_options_t dangling = Options("bad_input.dangling_splits");
    dangling.splits = reinterpret_cast<const int32_t*>(uintptr_t{16});  // never readable
    dangling.num_splits = 1 << 30;
    Require(hvd_allreduce(&xd, &xd, &dangling, &h), "allreduce with dangling alltoall splits");
    if (hvd_wait(h, 60.0) != HVD_OK)
      Fail(std::string("that allreduce failed: ") + hvd_last_error());
    hvd_release(h);
  }

  // A wait without a limit waits: rank 0 waits on an op the others start a little later.
  hvd_op_options_t later = Options("bad_input.later");
  if (R() != 0) std::this_thread::sleep_for(std::chrono::milliseconds(200));
  Require(hvd_allreduce(&xd, &xd, &later, &h), "allreduce 'bad_input.later'");
  if (hvd_wait(h, std::nan("")) != HVD_INVALID_ARGUMENT) Fail("hvd_wait(NaN) was not refused");
  const hvd_status_t waited = hvd_wait(h, INFINITY);
  if (waited != HVD_OK) {
    Fail("hvd_wait(INFINITY) returned " + std::to_string(waited) + ": " + hvd_last_error());
  }
  hvd_release(h);

  // An alltoall given a split count without splits; a failed allgather has no outputs to count.
  hvd_op_options_t no_splits = Options("bad_input.no_splits");
  no_splits.num_splits = 2;
  if (hvd_alltoall(&xd, &no_splits, &h) != HVD_INVALID_ARGUMENT) {
    Fail("an alltoall with num_splits 2 and no splits was not refused");
  }
  hvd_tensor_t scalar = xd;
  scalar.ndim = 0;
  hvd_op_options_t zero_d = Options("bad_input.zero_d");
  Require(hvd_allgather(&scalar, &zero_d, &h), "allgather of a 0-d tensor");
  if (hvd_wait(h, 60.0) != HVD_REMOTE_ERROR) Fail("a 0-d allgather did not fail on every rank");
  int32_t outputs = -1;
  if (hvd_num_outputs(h, &outputs) != HVD_REMOTE_ERROR) {
    Fail("hvd_num_outputs of a failed allgather gave " + std::to_string(outputs) +
         " instead of its error");
  }
  hvd_release(h);

  // A grouped op's tensors on two devices (the second claims CUDA device 0) is refused at the
  // call, naming both, in any build: it used to fail inside the fusion buffer's device copy.
  Tensor y(HVD_FLOAT32, {3});
  hvd_tensor_t mixed[2] = {xd, y.Desc()};
  mixed[1].device = 0;
  hvd_op_options_t grouped = Options("bad_input.mixed");
  const auto refused_mixed = [&](hvd_status_t s, const char* op) {
    const std::string message = s == HVD_OK ? "" : hvd_last_error();
    if (s != HVD_INVALID_ARGUMENT ||
        message.find("'bad_input.mixed.1' is on CUDA device 0 but "
                     "'bad_input.mixed.0' on the CPU") == std::string::npos) {
      Fail(std::string(op) + " of a CPU and a CUDA tensor: expected a refusal naming both, got " +
           std::to_string(s) + " '" + message + "'");
    }
  };
  refused_mixed(hvd_grouped_allreduce(mixed, mixed, 2, &grouped, &h), "grouped allreduce");
  refused_mixed(hvd_grouped_allgather(mixed, 2, &grouped, &h), "grouped allgather");
  refused_mixed(hvd_grouped_reducescatter(mixed, 2, &grouped, &h), "grouped reducescatter");

  uint32_t flags = 0;
  Require(hvd_build_flags(&flags), "hvd_build_flags");
  if (hvd_join(-5, &h) != HVD_INVALID_ARGUMENT) Fail("hvd_join(-5) was not refused");
  if ((flags & HVD_BUILT_CUDA) == 0 && hvd_join(7, &h) != HVD_INVALID_ARGUMENT) {
    Fail("hvd_join(7) was not refused by a build without CUDA");
  }
}

}  // namespace hvd_e2e
