// scale_kernels.h in a build without nvcc (HVD_NO_SCALE_KERNEL): no kernel; NcclGroup then
// folds the factors into NCCL's pre-multiplied sum. Empty when scale_kernels.cu is built.
#include "runtime/transports/nccl/scale_kernels.h"

#ifdef HVD_NO_SCALE_KERNEL

namespace hvd::runtime {

bool HaveScaleKernel(int) { return false; }

cudaError_t LaunchScale(const void*, void*, int64_t, ncclDataType_t, double, cudaStream_t) {
  return cudaErrorNotSupported;
}

}  // namespace hvd::runtime

#endif  // HVD_NO_SCALE_KERNEL
