// Join (a joined rank contributes zeros; join returns the last rank to join) and shutdown
// followed by init again.
#include "scenarios.h"

namespace hvd_e2e {
namespace {

const char kNotInitialized[] = "Horovod has not been initialized; use hvd.init().";

// Rank `early` joins first; the others run allreduces to which it contributes zeros and see
// broadcast/allgather refused while it is joined; then everyone but `last` joins, and `last`
// runs one more allreduce alone (it completes only once all the others joined) before joining.
void JoinRound(int32_t early, int32_t last, int round) {
  const std::string tag = "join round " + std::to_string(round) + " (rank " +
                          std::to_string(early) + " first, rank " + std::to_string(last) + " last)";
  hvd_handle_t join = 0;
  if (R() == early) Require(hvd_join(HVD_DEVICE_CPU, &join), tag + ": hvd_join");
  if (R() != early) {
    // Sum of (r+1)*(i+1) over the ranks that have not joined.
    Tensor f(HVD_FLOAT32, {6});
    Tensor k(HVD_INT32, {3, 2});
    for (int64_t i = 0; i < 6; ++i) {
      f.Set(i, (R() + 1) * (i + 1));
      k.Set(i, (R() + 1) * (i + 1));
    }
    hvd_tensor_t fd = f.Desc(), kd = k.Desc();
    hvd_op_options_t fo = Options("join.f." + std::to_string(round));
    hvd_op_options_t ko = Options("join.k." + std::to_string(round));
    hvd_handle_t fh, kh;
    Require(hvd_allreduce(&fd, &fd, &fo, &fh), tag + ": allreduce float32");
    Require(hvd_allreduce(&kd, &kd, &ko, &kh), tag + ": allreduce int32");
    WaitRelease(fh, tag + ": allreduce float32");
    WaitRelease(kh, tag + ": allreduce int32");
    double active = 0;
    for (int32_t r = 0; r < N(); ++r) active += r == early ? 0 : r + 1;
    std::vector<double> want;
    for (int64_t i = 0; i < 6; ++i) want.push_back(active * (i + 1));
    ExpectValues(tag + ": allreduce float32 with a joined rank", f, want);
    ExpectValues(tag + ": allreduce int32 with a joined rank", k, want);

    Tensor b(HVD_FLOAT32, {2});
    hvd_tensor_t bd = b.Desc();
    hvd_op_options_t bo = Options("join.bc." + std::to_string(round));
    hvd_handle_t bh;
    Require(hvd_broadcast(&bd, &bd, &bo, &bh), tag + ": broadcast");
    std::string m = WaitFailure(bh, HVD_REMOTE_ERROR, tag + ": broadcast while a rank joined");
    if (m != "Broadcast is not supported with Join at this time.") {
      Fail(tag + ": broadcast while joined: unexpected message '" + m + "'");
    }
    hvd_op_options_t go = Options("join.ag." + std::to_string(round));
    Require(hvd_allgather(&bd, &go, &bh), tag + ": allgather");
    m = WaitFailure(bh, HVD_REMOTE_ERROR, tag + ": allgather while a rank joined");
    if (m.rfind("Allgather is not supported with Join at this time.", 0) != 0) {
      Fail(tag + ": allgather while joined: unexpected message '" + m + "'");
    }
  }
  if (R() != early && R() != last) Require(hvd_join(HVD_DEVICE_CPU, &join), tag + ": hvd_join");
  if (R() == last) {
    Tensor t(HVD_FLOAT64, {3});
    t.Fill(R() + 1);
    hvd_tensor_t d = t.Desc();
    hvd_op_options_t o = Options("join.last." + std::to_string(round));
    hvd_handle_t h;
    Require(hvd_allreduce(&d, &d, &o, &h), tag + ": allreduce on the last rank alone");
    WaitRelease(h, tag + ": allreduce on the last rank alone");
    ExpectValues(tag + ": allreduce with every other rank joined", t,
                 std::vector<double>(3, R() + 1));
    Require(hvd_join(HVD_DEVICE_CPU, &join), tag + ": hvd_join");
  }
  WaitOk(join, tag + ": join");
  int32_t last_joined = -1;
  Require(hvd_join_result(join, &last_joined), tag + ": hvd_join_result");
  Require(hvd_release(join), tag + ": release join");
  if (last_joined != last) {
    Fail(tag + ": join returned last joined rank " + std::to_string(last_joined) + ", expected " +
         std::to_string(last));
  }
  // Nobody is joined any more: a normal allreduce sums every rank.
  SumAllreduce("join.after." + std::to_string(round), R() + 1, N() * (N() + 1) / 2.0);
}

// Calls that need an initialized runtime fail with Horovod's message.
void ExpectNotInitialized(const std::string& when) {
  int32_t initialized = -1, rank = -1;
  Require(hvd_is_initialized(&initialized), "hvd_is_initialized");
  if (initialized != 0) Fail(when + ": hvd_is_initialized = " + std::to_string(initialized));
  ExpectStatus(hvd_rank(&rank), HVD_NOT_INITIALIZED, when + ": hvd_rank");
  Tensor t(HVD_FLOAT32, {2});
  hvd_tensor_t d = t.Desc();
  hvd_op_options_t o = Options("reinit.refused");
  hvd_handle_t h = 0;
  const hvd_status_t s = hvd_allreduce(&d, &d, &o, &h);
  ExpectStatus(s, HVD_NOT_INITIALIZED, when + ": allreduce");
  if (s != HVD_OK && std::string(hvd_last_error()) != kNotInitialized) {
    Fail(when + ": allreduce: expected message '" + kNotInitialized + "', got '" +
         hvd_last_error() + "'");
  }
}

}  // namespace

void Join() {
  JoinRound(N() - 1, 0, 0);
  JoinRound(0, N() - 1, 1);
}

void Reinit() {
  ExpectNotInitialized("before the first hvd_init");
  for (int round = 0; round < 3; ++round) {
    const std::string tag = "init round " + std::to_string(round);
    Require(hvd_init(), tag + ": hvd_init");
    int32_t rank = -1, size = -1;
    Require(hvd_rank(&rank), tag + ": hvd_rank");
    Require(hvd_size(&size), tag + ": hvd_size");
    if (round > 0 && (rank != Ctx().rank || size != Ctx().size)) {
      Fail(tag + ": rank/size " + std::to_string(rank) + "/" + std::to_string(size) +
           " differ from the first init's " + std::to_string(Ctx().rank) + "/" +
           std::to_string(Ctx().size));
    }
    Ctx().rank = rank;
    Ctx().size = size;
    // The same names in every round.
    SumAllreduce("reinit.x", R() + 1, N() * (N() + 1) / 2.0);
    for (int t = 0; t < 10; ++t) {
      SumAllreduce("reinit.y." + std::to_string(t), t, t * N());
    }
    // Round 1: rank 0 leaves an op nobody else submits; shutdown completes it with ABORTED.
    hvd_handle_t orphan = 0;
    Tensor o(HVD_FLOAT32, {2});
    if (round == 1 && R() == 0) {
      hvd_tensor_t d = o.Desc();
      hvd_op_options_t opts = Options("reinit.orphan");
      Require(hvd_allreduce(&d, &d, &opts, &orphan), tag + ": allreduce 'reinit.orphan'");
    }
    // Enqueued before any rank shuts down: a peer's shutdown ending the runtime first would
    // refuse the enqueue instead (worker_np2_shm_all under ASan, 2026-11-29).
    if (round == 1) GlobalBarrier(tag + ": barrier after the orphan");
    Require(hvd_shutdown(), tag + ": hvd_shutdown");
    if (orphan != 0) WaitFailure(orphan, HVD_ABORTED, tag + ": op pending at shutdown");
    ExpectNotInitialized("after shutdown in " + tag);
  }
}

}  // namespace hvd_e2e
