#ifndef HVD_TEST_MULTIPROC_KNOWN_VALUES_H_
#define HVD_TEST_MULTIPROC_KNOWN_VALUES_H_

#include <cstddef>
#include <initializer_list>

#include "runtime/transports/communicator.h"
#include "runtime/transports/data_type.h"

namespace hvd::test {

// Known per-rank inputs and their reductions for the backend collectives tests: each rank
// fills element i with Value(dtype, rank, i) and checks the result against Expected(...).
inline constexpr runtime::DataType kAllTypes[] = {
    runtime::DataType::kUInt8,   runtime::DataType::kInt8,     runtime::DataType::kUInt16,
    runtime::DataType::kInt16,   runtime::DataType::kInt32,    runtime::DataType::kInt64,
    runtime::DataType::kFloat16, runtime::DataType::kBFloat16, runtime::DataType::kFloat32,
    runtime::DataType::kFloat64, runtime::DataType::kBool};

// Rank r's element i: small integers (exact in every type, products of 4 ranks fit in int8);
// bool alternates.
double Value(runtime::DataType dtype, int rank, size_t i);
// a (op) b as the backend computes it for `dtype` (bool: Min/Product = and, else or).
double Combine(runtime::DataType dtype, runtime::ReduceOp op, double a, double b);
// Element i of a `dtype` buffer, written from / read as a double.
void Store(runtime::DataType dtype, void* base, size_t i, double v);
double Load(runtime::DataType dtype, const void* base, size_t i);
// Element i of the reduction over ranks 0..size-1 in rank order.
double Expected(runtime::DataType dtype, runtime::ReduceOp op, int size, size_t i);

// In a forked rank: allreduces of every dtype and each op of `ops`, of each count of `counts`
// elements, from Value inputs; every element must be Expected. Returns 0, or prints the first
// difference (stderr) and returns 1.
int CheckAllreduceKnownValues(runtime::Communicator& comm, std::initializer_list<size_t> counts,
                              std::initializer_list<runtime::ReduceOp> ops);

}  // namespace hvd::test

#endif  // HVD_TEST_MULTIPROC_KNOWN_VALUES_H_
