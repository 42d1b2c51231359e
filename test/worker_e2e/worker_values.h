// What the C API's end-to-end workers (hvd_e2e_worker, test/gpu_e2e's hvd_gpu_worker) share
// about values: the dtypes, an element of any dtype read and written as a double (float16 and
// bfloat16 rounded to nearest even), and the reductions' inputs with their expected results.
// The C API only (hvd/c_api.h).
#ifndef HVD_TEST_WORKER_E2E_WORKER_VALUES_H_
#define HVD_TEST_WORKER_E2E_WORKER_VALUES_H_

#include <hvd/c_api.h>

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace hvd_worker {

struct DType {
  hvd_dtype_t id;
  const char* name;
  size_t size;
  bool is_signed;  // has negative values
  bool is_float;
};

// All eleven dtypes of the C API, bool last.
const std::vector<DType>& AllDTypes();
// The dtype `id`; null for an unknown one.
const DType* FindDType(hvd_dtype_t id);

// Element `p` of dtype `dtype` (a dense buffer's bytes), as a double.
void SetElement(unsigned char* p, hvd_dtype_t dtype, double v);
double GetElement(const unsigned char* p, hvd_dtype_t dtype);

// Allreduce/reducescatter inputs: element i of the member at position `pos` of a set of `n`.
// Sum, Average, Min and Max use s(i) * (b(i) + d(pos)), b(i) = 3..7, with members in pairs
// d = +m, -m (m = 1..3; an odd n's last member 0), so d sums to 0 and an average is exact in
// every dtype, and no value is negative for unsigned dtypes; Product uses 1..3 on four members
// per element and 1 on the rest (|product| <= 81 at any n); bool uses bit pos % 4 of
// i + pos / 4. s(i) = -1 for odd i of signed dtypes. Every dtype and op holds unscaled for 2-16
// members (|sum| <= 112 at 16); the scaled integer cases only while ReduceFits.
double ReduceInput(hvd_reduce_op_t op, const DType& d, int32_t pos, int32_t n, int64_t i);
// The reduction over all n members of ReduceInput (with pre/postscale), computed in double.
double ReduceExpected(hvd_reduce_op_t op, const DType& d, int32_t n, int64_t i,
                      double prescale = 1.0, double postscale = 1.0);
// Whether the sum of n members' ReduceInput scaled by `prescale`, and the result, fit an
// integer dtype (int8 at 16 members holds the sum of 112 but not twice it; floats and bool
// always).
bool ReduceFits(hvd_reduce_op_t op, const DType& d, int32_t n, double prescale, double postscale);
const char* ReduceOpName(hvd_reduce_op_t op);
// "[1, 2, 3]"
std::string List(const std::vector<int32_t>& v);

}  // namespace hvd_worker

#endif  // HVD_TEST_WORKER_E2E_WORKER_VALUES_H_
