// The storage the steady-state path reuses instead of allocating: ReuseVector's slots, the
// tensor queue's recycled nodes and the handle manager's recycled states. Behaviour must not
// change with reuse: names, requests and handles read back exactly what was last put in.
#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <vector>

#include "runtime/core/execution/output_memory.h"
#include "runtime/core/handle_manager.h"
#include "runtime/core/reuse_vector.h"
#include "runtime/core/tensor_queue.h"

namespace hvd::runtime {
namespace {

TEST(ReuseVectorTest, ClearKeepsSlotsAndRefillOverwritesThem) {
  ReuseVector<std::string> v = {"a-rather-long-tensor-name-0", "b"};
  const char* first_buffer = v[0].data();
  v.clear();
  EXPECT_TRUE(v.empty());
  v.push_back(std::string("another-long-tensor-name-1"));
  ASSERT_EQ(v.size(), 1u);
  EXPECT_EQ(v[0], "another-long-tensor-name-1");
  EXPECT_EQ(v[0].data(), first_buffer);  // same characters buffer: no allocation
  EXPECT_EQ(std::distance(v.begin(), v.end()), 1);
  EXPECT_THROW((void)v.at(1), std::out_of_range);
}

TEST(ReuseVectorTest, CopiesAndComparisonsSeeOnlyTheContent) {
  ReuseVector<std::string> a = {"x", "y", "z"};
  a.pop_back();
  ReuseVector<std::string> b = {"x", "y"};
  EXPECT_EQ(a, b);
  ReuseVector<std::string> c = a;
  EXPECT_EQ(c.ToVector(), (std::vector<std::string>{"x", "y"}));
  ReuseVector<std::string> d = {"1", "2", "3", "4"};
  d = a;  // element-wise into d's slots
  EXPECT_EQ(d, a);
  ReuseVector<std::string> moved = std::move(d);
  EXPECT_EQ(moved, a);
  EXPECT_TRUE(d.empty());  // NOLINT(bugprone-use-after-move): moved-from is empty
}

TensorEntry Entry(const std::string& name, std::vector<int64_t> shape) {
  TensorEntry e;
  e.request.name = name;
  e.request.shape = std::move(shape);
  e.request.group = "g";
  e.handle = 7;
  return e;
}

TEST(TensorQueueTest, RecycledEntriesCarryOnlyTheNewRequest) {
  TensorQueue queue;
  TensorEntry first = Entry("layer.0.weight.with.a.long.name", {4, 4});
  ASSERT_TRUE(queue.Add(std::span(&first, 1)).ok());
  std::vector<const Request*> fresh;
  queue.PopRequests(&fresh);
  ASSERT_EQ(fresh.size(), 1u);
  EXPECT_EQ(fresh[0]->name, "layer.0.weight.with.a.long.name");
  EXPECT_EQ(queue.size(), 1u);

  std::vector<TensorEntry*> taken;
  queue.Take(std::vector<std::string>{"layer.0.weight.with.a.long.name", "not-there"}, &taken);
  ASSERT_EQ(taken.size(), 2u);
  ASSERT_NE(taken[0], nullptr);
  EXPECT_EQ(taken[1], nullptr);
  const TensorEntry* storage = taken[0];
  EXPECT_EQ(&storage->request, fresh[0]);
  EXPECT_EQ(storage->request.shape, (std::vector<int64_t>{4, 4}));
  EXPECT_EQ(queue.Take("layer.0.weight.with.a.long.name"), nullptr);  // taken once only
  EXPECT_EQ(queue.size(), 0u);
  queue.Unreserve(std::vector<std::string>{"layer.0.weight.with.a.long.name"});

  // The next Add reuses the node: same storage, nothing of the old entry left over.
  TensorEntry second;
  second.request.name = "b";
  second.request.shape = {3};
  ASSERT_TRUE(queue.Add(std::span(&second, 1)).ok());
  fresh.clear();
  queue.PopRequests(&fresh);
  ASSERT_EQ(fresh.size(), 1u);
  EXPECT_EQ(fresh[0], &storage->request);
  EXPECT_EQ(fresh[0]->name, "b");
  EXPECT_EQ(fresh[0]->shape, std::vector<int64_t>{3});
  EXPECT_EQ(fresh[0]->group, "");
  TensorEntry* b = queue.Take("b");
  ASSERT_EQ(b, storage);
  EXPECT_EQ(b->handle, 0);
}

TEST(TensorQueueTest, DuplicateNamesAreRefusedWithNothingAdded) {
  TensorQueue queue;
  TensorEntry a = Entry("dup", {1});
  ASSERT_TRUE(queue.Add(std::span(&a, 1)).ok());
  std::vector<TensorEntry> group = {Entry("fresh", {1}), Entry("dup", {2})};
  Status s = queue.Add(group);
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(s.message().find(kDuplicateNameError), std::string::npos) << s.message();
  EXPECT_NE(s.message().find("(tensor 'dup')"), std::string::npos) << s.message();
  EXPECT_EQ(queue.size(), 1u);
  std::vector<const Request*> fresh;
  queue.PopRequests(&fresh);
  EXPECT_EQ(fresh.size(), 1u);  // only "dup"'s first enqueue
  // A name repeated within one call is refused the same way.
  std::vector<TensorEntry> twice = {Entry("x", {1}), Entry("x", {1})};
  EXPECT_EQ(queue.Add(twice).code(), StatusCode::kInvalidArgument);
  TensorEntry fresh_alone = Entry("fresh", {1});
  EXPECT_TRUE(queue.Add(std::span(&fresh_alone, 1)).ok());  // nothing of the group stayed
  EXPECT_EQ(queue.size(), 2u);
}

TEST(TensorQueueTest, NamesStayReservedAfterTheEntryRanUntilUnreserved) {
  TensorQueue queue;
  TensorEntry a = Entry("held", {1});
  ASSERT_TRUE(queue.Add(std::span(&a, 1)).ok());
  ASSERT_NE(queue.Take("held"), nullptr);  // the op ran
  a = Entry("held", {1});
  EXPECT_EQ(queue.Add(std::span(&a, 1)).code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(queue.Find("held"), nullptr);  // taken entries are not found
  queue.Unreserve(std::vector<std::string>{"held"});
  EXPECT_TRUE(queue.Add(std::span(&a, 1)).ok());
  EXPECT_NE(queue.Find("held"), nullptr);
}

TEST(TensorQueueTest, TakeAllFailsWhatIsQueuedAndKeepsTheNamesReserved) {
  TensorQueue queue;
  std::vector<TensorEntry> entries = {Entry("ran", {1}), Entry("queued", {1})};
  ASSERT_TRUE(queue.Add(entries).ok());
  ASSERT_NE(queue.Take("ran"), nullptr);
  std::vector<TensorEntry> all = queue.TakeAll();
  ASSERT_EQ(all.size(), 1u);
  EXPECT_EQ(all[0].request.name, "queued");
  EXPECT_EQ(queue.size(), 0u);
  TensorEntry again = Entry("queued", {1});
  EXPECT_EQ(queue.Add(std::span(&again, 1)).code(), StatusCode::kInvalidArgument);
}

// A controller's last TakeAll (its set removed, the runtime failed) closes its queue: an
// enqueue that found the controller before and adds only now fails with the same status. Until
// 2026-11-30 it was added to a queue no cycle would ever read, and its handle never completed
// (found by review: an enqueue on a set racing the set's negotiated removal).
TEST(TensorQueueTest, AClosingTakeAllRefusesLaterAdds) {
  TensorQueue queue;
  TensorEntry a = Entry("before", {1});
  ASSERT_TRUE(queue.Add(std::span(&a, 1)).ok());
  const Status removed = Status::Aborted("process set 1 was removed");
  ASSERT_EQ(queue.TakeAll(removed).size(), 1u);
  TensorEntry late = Entry("late", {1});
  const Status s = queue.Add(std::span(&late, 1));
  EXPECT_EQ(s.code(), StatusCode::kAborted);
  EXPECT_EQ(s.message(), "process set 1 was removed");
  EXPECT_EQ(queue.size(), 0u);
  EXPECT_EQ(queue.Find("late"), nullptr);
}

TEST(HandleManagerTest, ReleaseEndsTheReservationOfTheHandlesNames) {
  HandleManager handles;
  auto queue = std::make_shared<TensorQueue>();
  std::vector<TensorEntry> group = {Entry("g.0", {1}), Entry("g.1", {1})};
  const std::vector<std::string> names = {"g.0", "g.1"};
  const int64_t h = handles.Create(2, 0, queue, names);
  ASSERT_TRUE(queue->Add(group).ok());
  handles.FinishPart(h, Status::OK());
  EXPECT_EQ(handles.Release(h).code(), StatusCode::kPreconditionFailed);  // not done yet
  handles.FinishPart(h, Status::OK());
  group = {Entry("g.0", {1}), Entry("g.1", {1})};
  EXPECT_EQ(queue->Add(group).code(), StatusCode::kInvalidArgument);  // still reserved
  ASSERT_TRUE(handles.Release(h).ok());
  EXPECT_TRUE(queue->Add(group).ok());
}

// A handle whose entries were refused by the queue must not end the reservation of the op that
// holds those names.
TEST(HandleManagerTest, AnAbandonedHandleLeavesOthersReservationsAlone) {
  HandleManager handles;
  auto queue = std::make_shared<TensorQueue>();
  const std::vector<std::string> names = {"x"};
  const int64_t first = handles.Create(1, 0, queue, names);
  TensorEntry x = Entry("x", {1});
  ASSERT_TRUE(queue->Add(std::span(&x, 1)).ok());
  const int64_t second = handles.Create(1, 0, queue, names);
  x = Entry("x", {1});
  ASSERT_FALSE(queue->Add(std::span(&x, 1)).ok());
  handles.Abandon(second, Status::InvalidArgument("duplicate"));
  EXPECT_EQ(handles.Poll(second).status().code(), StatusCode::kNotFound);  // released
  EXPECT_EQ(queue->Add(std::span(&x, 1)).code(), StatusCode::kInvalidArgument);
  handles.FinishPart(first, Status::OK());
  ASSERT_TRUE(handles.Release(first).ok());
  EXPECT_TRUE(queue->Add(std::span(&x, 1)).ok());
  EXPECT_EQ(handles.live_handles(), 0u);
}

TEST(HandleManagerTest, ReleasedStateIsReusedButHandlesAreNot) {
  HandleManager handles;
  const int64_t h1 = handles.Create(1, 1);
  handles.SetOutput(h1, 0, OutputTensor{AllocOutput(8), DataType::kFloat32, {2}, -1});
  handles.SetIntResult(h1, 42);
  handles.FinishPart(h1, Status::Aborted("first op failed"));
  ASSERT_EQ(handles.Wait(h1, std::chrono::seconds(1)).code(), StatusCode::kAborted);
  ASSERT_TRUE(handles.Release(h1).ok());
  EXPECT_EQ(handles.Poll(h1).status().code(), StatusCode::kNotFound);

  // The recycled state starts clean: no status, outputs, or result of the previous handle.
  const int64_t h2 = handles.Create(1, 0);
  EXPECT_NE(h2, h1);
  EXPECT_FALSE(*handles.Poll(h2));
  handles.FinishPart(h2, Status::OK());
  EXPECT_TRUE(handles.Wait(h2, std::chrono::seconds(1)).ok());
  EXPECT_EQ(*handles.NumOutputs(h2), 0);
  EXPECT_EQ(*handles.IntResult(h2), -1);
  EXPECT_EQ(handles.live_handles(), 1u);
  ASSERT_TRUE(handles.Release(h2).ok());
  EXPECT_EQ(handles.live_handles(), 0u);
}

// The sequence in a handle's upper bits starts again at 1 after kLastSequence: every handle
// stays positive and is found (past 2^39 they turned negative and were never found).
TEST(HandleManagerTest, HandleNumbersStayPositiveWhenTheSequenceWraps) {
  HandleManager handles(HandleManager::kLastSequence - 1);
  std::vector<int64_t> made;
  for (int i = 0; i < 4; ++i) made.push_back(handles.Create(1, 0));
  for (int64_t h : made) {
    EXPECT_GT(h, 0);
    handles.FinishPart(h, Status::OK());
    EXPECT_TRUE(handles.Wait(h, std::chrono::seconds(1)).ok()) << h;
  }
  EXPECT_EQ(static_cast<uint64_t>(made[1]) >> 24, HandleManager::kLastSequence);
  EXPECT_EQ(static_cast<uint64_t>(made[2]) >> 24, 1u);
  for (int64_t h : made) EXPECT_TRUE(handles.Release(h).ok()) << h;
}

}  // namespace
TEST(HandleManagerTest, FinishPartsCompletesEveryHandleAndCountsWhatIsInFlight) {
  HandleManager handles;
  const int64_t a = handles.Create(1, 0), b = handles.Create(2, 0), c = handles.Create(1, 0);
  EXPECT_TRUE(*handles.Poll(handles.Create(0, 0)));  // no parts: done at once, not in flight
  EXPECT_EQ(handles.in_flight(), 3);
  const std::vector<int64_t> executed = {a, b, c};
  handles.FinishParts(executed, Status::Aborted("fused op failed"));
  EXPECT_TRUE(*handles.Poll(a));
  EXPECT_FALSE(*handles.Poll(b));  // one of its two parts is still to come
  EXPECT_TRUE(*handles.Poll(c));
  EXPECT_EQ(handles.Wait(c, std::chrono::seconds(1)).code(), StatusCode::kAborted);
  EXPECT_EQ(handles.in_flight(), 1);
  EXPECT_FALSE(handles.WaitDone(b, std::chrono::milliseconds(1), handles.wakes()));
  handles.FinishPart(b, Status::OK());
  EXPECT_TRUE(handles.WaitDone(b, std::chrono::milliseconds(1), handles.wakes()));
  EXPECT_EQ(handles.Wait(b, std::chrono::seconds(1)).code(), StatusCode::kAborted);  // first
  EXPECT_EQ(handles.in_flight(), 0);
}

// A caller waiting on a lone op found another thread's iteration running; that iteration ended
// (WakeWaiters) before the caller's WaitDone began. The wake must still end that WaitDone, so
// the caller runs the next iteration at once (it slept out its 1 ms slice: a lone op after a
// batch took ~1 ms instead of ~10 us).
TEST(HandleManagerTest, AWakeBetweenLookingAndWaitingIsNotLost) {
  HandleManager handles;
  const int64_t h = handles.Create(1, 0);
  const uint64_t since = handles.wakes();
  handles.WakeWaiters();
  const auto t0 = std::chrono::steady_clock::now();
  EXPECT_FALSE(handles.WaitDone(h, std::chrono::seconds(20), since));
  EXPECT_LT(std::chrono::steady_clock::now() - t0, std::chrono::seconds(10));
  // A wake counted before it does not end a later wait
  EXPECT_FALSE(handles.WaitDone(h, std::chrono::milliseconds(5), handles.wakes()));
  handles.FinishPart(h, Status::OK());
  EXPECT_TRUE(handles.WaitDone(h, std::chrono::milliseconds(5), handles.wakes()));
  EXPECT_TRUE(handles.Release(h).ok());
}

}  // namespace hvd::runtime
