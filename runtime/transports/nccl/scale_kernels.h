#ifndef HVD_RUNTIME_TRANSPORTS_NCCL_SCALE_KERNELS_H_
#define HVD_RUNTIME_TRANSPORTS_NCCL_SCALE_KERNELS_H_

#include <cuda_runtime_api.h>
#include <nccl.h>

#include <cstdint>

namespace hvd::runtime {

// Whether the scaling kernel runs on CUDA device `device`: the build has it (scale_kernels.cu,
// compiled when CMake finds nvcc) with machine code or PTX the device can run (the default
// CMAKE_CUDA_ARCHITECTURES has none for GPUs before Turing: a V100 with CUDA 12). Asked once per
// device (cudaFuncGetAttributes), then remembered; any thread. Where it is false on any member
// of a process set, NcclGroup folds the prescale and postscale into one pre-multiplied sum.
bool HaveScaleKernel(int device);

// Enqueues out[i] = in[i] * factor for `count` elements on `stream` (in may equal out), as
// Horovod's GPU scaling kernel (horovod/common/ops/cuda/cuda_kernels.cu, ScaleBufferCudaImpl)
// computes it: the factor rounded to the element type first (float16 and bfloat16 through
// float, as Horovod's __float2half((float)factor)), the product rounded once to the type. A
// float16 or bfloat16 product of two values of the type is exact in float, so multiplying in
// float and rounding once gives the bits of Horovod's __hmul2. Only enqueues: the error is a
// launch error (cudaLaunchKernel's), not consumed here. `type`: NCCL's floating-point types
// (ncclFloat16, ncclBfloat16, ncclFloat32, ncclFloat64); any other is cudaErrorInvalidValue.
cudaError_t LaunchScale(const void* in, void* out, int64_t count, ncclDataType_t type,
                        double factor, cudaStream_t stream);

}  // namespace hvd::runtime

#endif  // HVD_RUNTIME_TRANSPORTS_NCCL_SCALE_KERNELS_H_
