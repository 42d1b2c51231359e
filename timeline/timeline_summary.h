#ifndef HVD_TIMELINE_TIMELINE_SUMMARY_H_
#define HVD_TIMELINE_TIMELINE_SUMMARY_H_

#include <cstdint>
#include <map>
#include <nlohmann/json_fwd.hpp>
#include <string>
#include <utility>

#include "common/status.h"

// Reads a timeline (ours or Horovod's; a JSON array of trace events or an object with
// "traceEvents") and totals where the time went.
//
// Rows: a tensor is named by its row's thread_name (all-ranks layout) or else its
// process_name (Horovod layout). B/E pairs are matched per (pid, tid):
//   - a top-level span named NEGOTIATE_<OP> is negotiation time of <OP>;
//   - any other top-level span is one operation of that type (count, time, bytes);
//   - spans directly inside an operation are activities: MEMCPY_* is memcpy time, a
//     backend collective (<BACKEND>_<COLLECTIVE>, e.g. GLOO_ALLREDUCE, NCCL_BCAST,
//     MPI_ALLGATHER) is transfer time, anything else (WAIT_FOR_DATA, ...) is other;
//   - complete ('X') QUEUE events (args.op = the op type) are queue time: enqueue to op
//     start, on a row of their own ("QUEUE" thread of the tensor, or "<tensor> QUEUE").
// Bytes come from the final E's args: "bytes" when present, else dtype x shape when
// both parse. Shares are fractions of negotiation + operation time (queue time overlaps
// negotiation and is reported on its own). All-ranks traces (process rows named "rank N")
// are also totalled per rank, so a straggler stands out.
//
// Gaps between collectives (per rank row of an all-ranks trace, else the trace's one rank):
// the transfers (the backend collectives above) of one rank in time order, a fused op's once
// (its activity is on each of its tensors' rows) and overlapping ones merged; each gap from one
// transfer's end to the next one's start is "queued" when a tensor was enqueued before the
// first transfer ended and its op started after (its QUEUE span crosses the end): the backend
// idled while work waited, for the op's completion, the next negotiation and its launch. That
// is what a runtime that completes an op off the cycle and negotiates the next meanwhile
// (Horovod's GPU finalizer threads) could hide. Other gaps are "idle": nothing had been handed
// over yet (e.g. backward had not produced the next gradient).
// Pure functions; thread-safe.
namespace hvd::timeline {

struct SpanStats {
  int64_t count = 0;  // completed operations
  double op_us = 0.0;
  int64_t bytes = 0;
  int64_t negotiations = 0;
  double negotiate_us = 0.0;
  double transfer_us = 0.0;
  double memcpy_us = 0.0;
  double other_activity_us = 0.0;
  int64_t queued = 0;  // QUEUE spans
  double queue_us = 0.0;

  double mean_us() const { return count ? op_us / static_cast<double>(count) : 0.0; }
  // Fractions in [0, 1] of negotiate_us + op_us.
  double negotiate_share() const;
  double transfer_share() const;
  double memcpy_share() const;
};

struct GapStats {
  int64_t transfers = 0;    // a fused op's once, overlapping ones merged
  int64_t gaps = 0;         // between consecutive transfers: transfers - 1
  int64_t queued_gaps = 0;  // with a tensor enqueued before the earlier transfer ended
  double queued_us = 0.0;
  double queued_median_us = 0.0;
  double queued_max_us = 0.0;
  double idle_us = 0.0;  // the other gaps
};

struct TimelineSummary {
  std::map<std::string, SpanStats> by_op;                              // op type
  std::map<std::pair<std::string, std::string>, SpanStats> by_tensor;  // (tensor, op type)
  std::map<std::pair<std::string, std::string>, SpanStats> by_rank;    // ("rank N", op type)
  // By rank row ("rank N"), or "" for a trace of one rank (Horovod's layout: rank 0's).
  std::map<std::string, GapStats> gaps;
  int64_t unmatched_ends = 0;  // E without an open B (e.g. dropped events)
  int64_t open_spans = 0;      // B never closed (e.g. the job was killed)
  int64_t dropped_events = 0;  // the writer's hvd_dropped_events count (queue full)
  // The file was torn mid-growth (timeline_repair.h) and was read as repaired.
  bool torn_growth = false;
  // The array was never closed (Horovod's writer leaves it so), or the file was cut inside an
  // event (truncated_at = its size): read as repaired, i.e. its first kept_events events.
  bool unclosed = false;
  int64_t truncated_at = -1;
  int64_t kept_events = 0;
};

Result<TimelineSummary> Summarize(const nlohmann::json& trace);
// Errors name the file: kNotFound / kIoError when unreadable, kInvalidArgument when it is a
// directory, empty or not a JSON trace. A file a killed writer tore mid-growth, an array never
// closed and a file cut inside an event are read as repaired (timeline_repair.h) and flagged.
Result<TimelineSummary> SummarizeFile(const std::string& path);
// The same for a file's text; `path` only names it in errors.
Result<TimelineSummary> SummarizeText(std::string text, const std::string& path);

// Bytes per element for Horovod/torch/numpy dtype spellings ("float32", "HOROVOD_FLOAT32",
// "torch.float32"); 0 if unknown.
int64_t DtypeSize(std::string_view dtype);

// Fixed-width tables: per op type, per tensor, per rank (all-ranks traces), then the gaps
// between collectives.
std::string FormatSummary(const TimelineSummary& summary);

}  // namespace hvd::timeline

#endif  // HVD_TIMELINE_TIMELINE_SUMMARY_H_
