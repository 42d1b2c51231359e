#ifndef HVD_PYTHON_OUTPUT_BUFFERS_H_
#define HVD_PYTHON_OUTPUT_BUFFERS_H_

#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <cstddef>
#include <cstdint>
#include <vector>

#include "runtime_api.h"

// The Python objects that own runtime-allocated outputs (hvd_output): an OutputBuffer for host
// memory (the buffer protocol: numpy.frombuffer wraps it without a copy), a DeviceBuffer for
// CUDA memory (__cuda_array_interface__, for CuPy or Numba). Both export DLPack capsules
// (__dlpack__, dlpack_export.h), hvd.torch's way to a tensor on either device. Either gives its
// memory back to the runtime when the last view of it is gone. Made and destroyed with the GIL
// held (a capsule's deleter takes it).
namespace hvd::python {

size_t ElementSize(hvd_dtype_t dtype);

// Whether the interpreter is shutting down (a destructor must not call into Python then).
bool InterpreterFinalizing();

// Host memory of an output, owned until destroyed (hvd_free).
class OutputBuffer {
 public:
  explicit OutputBuffer(const hvd_tensor_t& tensor);
  OutputBuffer(const OutputBuffer&) = delete;
  OutputBuffer& operator=(const OutputBuffer&) = delete;
  ~OutputBuffer();

  pybind11::buffer_info Buffer() const;
  void* data() const { return data_; }
  hvd_dtype_t dtype_code() const { return dtype_; }
  const std::vector<int64_t>& dims() const { return shape_; }
  int dtype() const { return static_cast<int>(dtype_); }
  pybind11::tuple shape() const { return pybind11::cast(shape_); }
  size_t nbytes() const { return nbytes_; }

 private:
  void* data_;
  hvd_dtype_t dtype_;
  std::vector<int64_t> shape_;
  size_t nbytes_;
};

// CUDA memory of an output (hvd_output's device >= 0: the op ran on NCCL), owned until
// destroyed. __cuda_array_interface__ describes it as flat bytes (bfloat16 has no typestr), its
// DLPack capsule in its dtype and shape; a consumer's tensor keeps this object alive while any
// view of it lives. Destroyed, it frees the memory in the order of the device's current
// stream at that moment (hvd_free_on_stream, the stream from set_stream_getter's function): work
// queued there on the tensor finishes first. Work on other streams must be ordered before it by
// the user, as for any tensor freed by torch's own allocator (Tensor.record_stream).
class DeviceBuffer {
 public:
  explicit DeviceBuffer(const hvd_tensor_t& tensor);
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;
  ~DeviceBuffer();

  pybind11::dict Interface() const;
  void* data() const { return data_; }
  hvd_dtype_t dtype_code() const { return dtype_; }
  const std::vector<int64_t>& dims() const { return shape_; }
  int dtype() const { return static_cast<int>(dtype_); }
  int device() const { return static_cast<int>(device_); }
  pybind11::tuple shape() const { return pybind11::cast(shape_); }
  size_t nbytes() const { return nbytes_; }

 private:
  void* data_;
  hvd_dtype_t dtype_;
  int32_t device_;
  std::vector<int64_t> shape_;
  size_t nbytes_;
};

// Registers OutputBuffer, DeviceBuffer and set_stream_getter on `m`. The buffers give their
// memory back through `api` (the loaded runtime's table, which lives as long as the process).
void BindOutputBuffers(pybind11::module_& m, const RuntimeApi* api);

}  // namespace hvd::python

#endif  // HVD_PYTHON_OUTPUT_BUFFERS_H_
