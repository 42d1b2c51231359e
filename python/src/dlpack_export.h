#ifndef HVD_PYTHON_DLPACK_EXPORT_H_
#define HVD_PYTHON_DLPACK_EXPORT_H_

#include <pybind11/pybind11.h>

#include <cstdint>
#include <vector>

#include "runtime_api.h"

// Runtime-allocated outputs as DLPack capsules (the `__dlpack__` protocol): what
// torch.utils.dlpack.from_dlpack, torch.from_dlpack, CuPy and JAX take without a copy, and
// without numpy (torch reads __cuda_array_interface__ only through numpy: "Numpy is not
// available" without it). The capsule is DLPack's unversioned "dltensor" (DLPack 0.x, read by
// every torch since 1.10 and still by 2.x), in the tensor's own dtype and shape; bool as uint8
// (DLPack's kDLBool is refused by torch 1.x), which hvd.torch views as bool.
namespace hvd::python {

// DLPack's device types for the memory hvd hands out.
enum class DlDevice : int32_t { kCpu = 1, kCuda = 2 };

// A "dltensor" capsule over `data` (`dtype`, `shape`, row-major, on `device_type` ordinal
// `device_id`) that holds a reference to `owner` until the consumer's tensor dies, or the capsule
// dies unconsumed. Its deleter takes the GIL itself: torch may run it on any thread. Before
// that, a `dl_device` (a (type, id) tuple, or None) other than the buffer's own or `copy=True` is
// a BufferError, as the array API asks of a producer that only exports in place. GIL held.
pybind11::object ExportDlpack(pybind11::handle owner, void* data, hvd_dtype_t dtype,
                              const std::vector<int64_t>& shape, DlDevice device_type,
                              int32_t device_id, const pybind11::object& dl_device,
                              const pybind11::object& copy);

}  // namespace hvd::python

#endif  // HVD_PYTHON_DLPACK_EXPORT_H_
