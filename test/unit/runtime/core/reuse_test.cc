// The storage the steady-state path reuses instead of allocating: ReuseVector's slots, the
// tensor queue's recycled nodes and the handle manager's recycled states. Behaviour must not
// change with reuse: names, requests and handles read back exactly what was last put in.
#include <gtest/gtest.h>

#include <string>

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

  std::vector<TensorQueue::Taken> taken;
  taken.push_back(queue.Take("layer.0.weight.with.a.long.name"));
  ASSERT_FALSE(taken[0].empty());
  const TensorEntry* storage = &taken[0].mapped();
  taken.push_back(queue.Take("not-there"));
  EXPECT_TRUE(taken[1].empty());
  queue.Recycle(&taken);
  EXPECT_TRUE(taken.empty());
  EXPECT_EQ(queue.size(), 0u);

  // The next Add reuses the node: same storage, nothing of the old entry left over.
  TensorEntry second;
  second.request.name = "b";
  second.request.shape = {3};
  ASSERT_TRUE(queue.Add(std::span(&second, 1)).ok());
  fresh.clear();
  queue.PopRequests(&fresh);
  ASSERT_EQ(fresh.size(), 1u);
  EXPECT_EQ(&fresh[0]->name, &storage->request.name);
  EXPECT_EQ(fresh[0]->name, "b");
  EXPECT_EQ(fresh[0]->shape, std::vector<int64_t>{3});
  EXPECT_EQ(fresh[0]->group, "");
  taken.push_back(queue.Take("b"));
  EXPECT_EQ(taken[0].mapped().handle, 0);
  EXPECT_EQ(taken[0].key(), "b");
}

TEST(TensorQueueTest, DuplicateNamesAreRefusedWithNothingAdded) {
  TensorQueue queue;
  TensorEntry a = Entry("dup", {1});
  ASSERT_TRUE(queue.Add(std::span(&a, 1)).ok());
  std::vector<TensorEntry> group = {Entry("fresh", {1}), Entry("dup", {1})};
  Status s = queue.Add(group);
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(s.message().find("(tensor 'dup')"), std::string::npos) << s.message();
  EXPECT_EQ(queue.size(), 1u);
}

TEST(TensorQueueTest, NamesStayReservedAfterTheEntryRanUntilUnreserved) {
  TensorQueue queue;
  TensorEntry a = Entry("held", {1});
  ASSERT_TRUE(queue.Add(std::span(&a, 1)).ok());
  std::vector<TensorQueue::Taken> taken;
  taken.push_back(queue.Take("held"));  // the op ran
  queue.Recycle(&taken);
  EXPECT_EQ(queue.Add(std::span(&a, 1)).code(), StatusCode::kInvalidArgument);
  const std::vector<std::string> names = {"held"};
  queue.Unreserve(names);
  EXPECT_TRUE(queue.Add(std::span(&a, 1)).ok());
}

TEST(HandleManagerTest, ReleaseHandsBackTheReservedNames) {
  HandleManager handles;
  const int64_t h = handles.Create(2, 0);
  const std::vector<std::string> names = {"g.0", "g.1"};
  handles.SetReservedNames(h, 3, names);
  handles.FinishPart(h, Status::OK());
  EXPECT_EQ(handles.Release(h).code(), StatusCode::kPreconditionFailed);  // not done yet
  handles.FinishPart(h, Status::OK());
  ReuseVector<std::string> released;
  int32_t set_id = -1;
  ASSERT_TRUE(handles.Release(h, &released, &set_id).ok());
  EXPECT_EQ(set_id, 3);
  EXPECT_EQ(released.ToVector(), names);
}

TEST(HandleManagerTest, ReleasedStateIsReusedButHandlesAreNot) {
  HandleManager handles;
  const int64_t h1 = handles.Create(1, 1);
  handles.SetOutput(h1, 0, OutputTensor{std::malloc(8), DataType::kFloat32, {2}, -1});
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
