// The result check of hvd-bench (hvd_bench.cc's file comment says what each op is checked
// with): the --dtype and --reduce-op the tensors use, the check data of each op, and the
// comparison of a rank's result with what it must be. Split from hvd_bench.cc to keep each file
// readable; one process, one thread, hence the globals.
#ifndef HVD_BENCH_HVD_BENCH_CHECK_H_
#define HVD_BENCH_HVD_BENCH_CHECK_H_

#include <hvd/c_api.h>

#include <cstddef>
#include <cstdint>
#include <string>

namespace hvd_bench {

// --reduce-op of the allreduces and reducescatters (the C API's default, Sum, unless given).
extern hvd_reduce_op_t g_reduce_op;

// --dtype of every tensor: its element size and the bits of a 1 in it (the tensors start as
// ones). Sizes are bytes whatever the dtype, rounded down to whole elements.
struct Dtype {
  const char* name;
  hvd_dtype_t type;
  size_t size;
  uint64_t one;
};
inline constexpr Dtype kDtypes[] = {{"float32", HVD_FLOAT32, 4, 0x3f800000},
                                    {"float16", HVD_FLOAT16, 2, 0x3c00},
                                    {"bfloat16", HVD_BFLOAT16, 2, 0x3f80},
                                    {"float64", HVD_FLOAT64, 8, 0x3ff0000000000000},
                                    {"int32", HVD_INT32, 4, 1},
                                    {"int64", HVD_INT64, 8, 1},
                                    {"int8", HVD_INT8, 1, 1},
                                    {"uint8", HVD_UINT8, 1, 1}};
extern Dtype g_dtype;

// The op being checked, parsed once (the checks look at every element).
enum class Op { kAllreduce, kBroadcast, kAllgather, kAlltoall, kReducescatter, kBarrier };
Op ParseOp(const std::string& op);

// The reductions' check data, chosen once for --reduce-op, --dtype and the rank count
// (ChooseReduceData): every result and partial result an integer the dtype holds exactly.
enum class ReduceData {
  kNone,    // not checked (g_not_checked says why)
  kSpread,  // rank r gives r + 1 + i % 7
  kParity,  // rank r gives 1 + (r + i) % 2 (sums too large for the spread)
  kOneRank  // rank i % n gives 2 + i % 3, the others 1 (product)
};
extern ReduceData g_reduce_data;
extern std::string g_not_checked;  // why the reductions are not checked
extern int g_checks;               // checks passed

// The reductions' check data for --reduce-op and --dtype at n ranks, or kNone with the reason
// in g_not_checked.
ReduceData ChooseReduceData(int n);
// Whether `op` is checked (barrier: nothing to check; reductions: unless kNone).
bool Checked(Op op);
// Fills `data` (`count` elements of g_dtype) with rank `rank`'s check input of tensor t.
void FillCheckInput(Op op, int rank, int n, char* data, size_t count, size_t t);
// "" when `got` (`got_bytes` of g_dtype elements) is rank me's result of the check of `op` on
// inputs of `count` elements (tensor t), else what is wrong with it (its first wrong element).
std::string Compare(Op op, int me, int n, size_t count, size_t t, const char* got,
                    size_t got_bytes);

}  // namespace hvd_bench

#endif  // HVD_BENCH_HVD_BENCH_CHECK_H_
