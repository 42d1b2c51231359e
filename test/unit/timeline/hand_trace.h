#ifndef HVD_TEST_UNIT_TIMELINE_HAND_TRACE_H_
#define HVD_TEST_UNIT_TIMELINE_HAND_TRACE_H_

// A small Horovod-layout trace whose totals are counted by hand in timeline_summary_test.cc:
//   grad.a (pid 1): two ALLREDUCEs
//     #1 negotiate 0-10; op 10-40 (memcpy 12-15 + 35-37, GLOO transfer 15-35), dtype/shape
//        float32 [2, 3] = 24 bytes
//     #2 negotiate 100-104; op 104-124 (QUEUE 104-106, NCCL transfer 106-120), bytes 1000
//   grad.b (pid 2): one BROADCAST: negotiate 0-6; op 6-26 (MPI_BCAST 6-16), HOROVOD_FLOAT64
//     [5] = 40 bytes; then a stray E and an ALLGATHER that never ends.
namespace hvd::timeline::testing {

inline constexpr const char* kHandTrace = R"([
{"name":"process_name","ph":"M","pid":0,"args":{"start_time_since_epoch_in_micros":1}},
{"name":"process_name","ph":"M","pid":1,"args":{"name":"grad.a"}},
{"name":"process_name","ph":"M","pid":2,"args":{"name":"grad.b"}},
{"ph":"B","name":"NEGOTIATE_ALLREDUCE","ts":0,"pid":1},
{"ph":"B","name":"NEGOTIATE_BROADCAST","ts":0,"pid":2},
{"ph":"X","name":"0","ts":5,"pid":1,"dur":0},
{"ph":"E","ts":6,"pid":2},
{"ph":"B","name":"BROADCAST","ts":6,"pid":2},
{"ph":"B","name":"MPI_BCAST","ts":6,"pid":2},
{"ph":"E","ts":10,"pid":1},
{"ph":"B","name":"ALLREDUCE","ts":10,"pid":1},
{"ph":"B","name":"MEMCPY_IN_FUSION_BUFFER","ts":12,"pid":1},
{"ph":"E","ts":15,"pid":1},
{"ph":"B","name":"GLOO_ALLREDUCE","ts":15,"pid":1},
{"ph":"E","ts":16,"pid":2},
{"ph":"E","ts":26,"pid":2,"args":{"dtype":"HOROVOD_FLOAT64","shape":"[5]"}},
{"ph":"E","ts":35,"pid":1},
{"ph":"B","name":"MEMCPY_OUT_FUSION_BUFFER","ts":35,"pid":1},
{"ph":"E","ts":37,"pid":1},
{"ph":"E","ts":40,"pid":1,"args":{"dtype":"float32","shape":"[2, 3]"}},
{"ph":"i","name":"CYCLE_START","ts":99,"pid":0,"s":"g"},
{"ph":"B","name":"NEGOTIATE_ALLREDUCE","ts":100,"pid":1},
{"ph":"E","ts":104,"pid":1},
{"ph":"B","name":"ALLREDUCE","ts":104,"pid":1},
{"ph":"B","name":"QUEUE","ts":104,"pid":1},
{"ph":"E","ts":106,"pid":1},
{"ph":"B","name":"NCCL_ALLREDUCE","ts":106,"pid":1},
{"ph":"E","ts":120,"pid":1},
{"ph":"E","ts":124,"pid":1,"args":{"dtype":"float32","shape":"[2, 3]","bytes":1000}},
{"ph":"E","ts":130,"pid":2},
{"ph":"B","name":"ALLGATHER","ts":140,"pid":2}
])";

}  // namespace hvd::timeline::testing

#endif  // HVD_TEST_UNIT_TIMELINE_HAND_TRACE_H_
