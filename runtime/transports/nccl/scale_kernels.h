#ifndef HVD_RUNTIME_TRANSPORTS_NCCL_SCALE_KERNELS_H_
#define HVD_RUNTIME_TRANSPORTS_NCCL_SCALE_KERNELS_H_

#include <cuda_runtime_api.h>

#include <cstdint>

namespace hvd::runtime {

// The element types the scaling kernel takes: NCCL's floating-point ones.
enum class ScaleType { kFloat16, kBFloat16, kFloat32, kFloat64 };

// Whether this build has the scaling kernel (scale_kernels.cu, compiled when CMake finds nvcc).
// Without it NcclGroup folds the prescale and postscale into one pre-multiplied sum.
bool HaveScaleKernel();

// Enqueues out[i] = in[i] * factor for `count` elements on `stream` (in may equal out), as
// Horovod's GPU scaling kernel (horovod/common/ops/cuda/cuda_kernels.cu, ScaleBufferCudaImpl)
// computes it: the factor rounded to the element type first (float16 and bfloat16 through
// float, as Horovod's __float2half((float)factor)), the product rounded once to the type. A
// float16 or bfloat16 product of two values of the type is exact in float, so multiplying in
// float and rounding once gives the bits of Horovod's __hmul2. Only enqueues: the error is a
// launch error (cudaLaunchKernel's), not consumed here.
cudaError_t LaunchScale(const void* in, void* out, int64_t count, ScaleType type, double factor,
                        cudaStream_t stream);

}  // namespace hvd::runtime

#endif  // HVD_RUNTIME_TRANSPORTS_NCCL_SCALE_KERNELS_H_
