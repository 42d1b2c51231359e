#include "dlpack_export.h"

#include <Python.h>

#include <memory>
#include <string>
#include <utility>

#include "output_buffers.h"

namespace py = pybind11;

namespace hvd::python {
namespace {

// DLPack's unversioned ABI (dlpack.h 0.8, github.com/dmlc/dlpack, Apache-2.0): fixed C structs
// that every consumer reads, declared here rather than taken from a package Debian lacks.
struct DLDevice {
  int32_t device_type;
  int32_t device_id;
};
struct DLDataType {
  uint8_t code;  // 0 int, 1 uint, 2 float, 4 bfloat
  uint8_t bits;
  uint16_t lanes;
};
struct DLTensor {
  void* data;
  DLDevice device;
  int32_t ndim;
  DLDataType dtype;
  int64_t* shape;
  int64_t* strides;  // in elements
  uint64_t byte_offset;
};
struct DLManagedTensor {
  DLTensor dl_tensor;
  void* manager_ctx;
  void (*deleter)(DLManagedTensor* self);
};

constexpr const char* kCapsuleName = "dltensor";
constexpr const char* kUsedCapsuleName = "used_dltensor";  // renamed so by the consumer

// One export: the managed tensor, its shape and strides, and the reference that keeps the
// buffer (and so its memory) alive.
struct Export {
  DLManagedTensor managed{};
  std::vector<int64_t> shape, strides;
  PyObject* owner = nullptr;
};

// Called by the consumer when its tensor dies (torch: from whatever thread frees the storage,
// with or without the GIL), or by the capsule's destructor when nothing consumed it.
void DeleteExport(DLManagedTensor* managed) {
  auto* e = static_cast<Export*>(managed->manager_ctx);
  // During interpreter shutdown the reference is left: the process is ending, and taking the
  // GIL then may not return.
  if (!InterpreterFinalizing()) {
    PyGILState_STATE gil = PyGILState_Ensure();
    Py_DECREF(e->owner);
    PyGILState_Release(gil);
  }
  delete e;
}

void DestroyCapsule(PyObject* capsule) {
  if (PyCapsule_IsValid(capsule, kUsedCapsuleName) != 0) return;  // the consumer owns it now
  auto* managed = static_cast<DLManagedTensor*>(PyCapsule_GetPointer(capsule, kCapsuleName));
  if (managed == nullptr) {
    PyErr_WriteUnraisable(capsule);
    return;
  }
  managed->deleter(managed);
}

DLDataType ToDl(hvd_dtype_t dtype) {
  switch (dtype) {
    case HVD_UINT8:
      return {1, 8, 1};
    case HVD_INT8:
      return {0, 8, 1};
    case HVD_UINT16:
      return {1, 16, 1};
    case HVD_INT16:
      return {0, 16, 1};
    case HVD_INT32:
      return {0, 32, 1};
    case HVD_INT64:
      return {0, 64, 1};
    case HVD_FLOAT16:
      return {2, 16, 1};
    case HVD_BFLOAT16:
      return {4, 16, 1};
    case HVD_FLOAT32:
      return {2, 32, 1};
    case HVD_FLOAT64:
      return {2, 64, 1};
    case HVD_BOOL:
      return {1, 8, 1};  // kDLBool (6) is DLPack 0.8's; torch 1.x refuses it ("Unsupported code 6")
  }
  throw py::value_error("dtype code " + std::to_string(static_cast<int>(dtype)) +
                        " has no DLPack type");
}

}  // namespace

py::object ExportDlpack(py::handle owner, void* data, hvd_dtype_t dtype,
                        const std::vector<int64_t>& shape, DlDevice device_type, int32_t device_id,
                        const py::object& dl_device, const py::object& copy) {
  const auto type = static_cast<int32_t>(device_type);
  if (!dl_device.is_none()) {
    auto asked = dl_device.cast<std::pair<int32_t, int32_t>>();
    if (asked.first != type || asked.second != device_id) {
      throw py::buffer_error("this output is on DLPack device (" + std::to_string(type) + ", " +
                             std::to_string(device_id) + "), not (" + std::to_string(asked.first) +
                             ", " + std::to_string(asked.second) +
                             "): hvd exports its outputs in place, move the tensor afterwards");
    }
  }
  if (!copy.is_none() && copy.cast<bool>()) {
    throw py::buffer_error("hvd exports its outputs in place (copy=True is not supported)");
  }
  auto e = std::make_unique<Export>();
  e->shape = shape;
  e->strides.assign(shape.size(), 1);
  for (size_t i = shape.size(); i-- > 1;) e->strides[i - 1] = e->strides[i] * shape[i];
  DLTensor& t = e->managed.dl_tensor;
  t.data = data;
  t.device = {type, device_id};
  t.ndim = static_cast<int32_t>(shape.size());
  t.dtype = ToDl(dtype);
  t.shape = e->shape.empty() ? nullptr : e->shape.data();
  t.strides = e->strides.empty() ? nullptr : e->strides.data();
  t.byte_offset = 0;
  e->managed.manager_ctx = e.get();
  e->managed.deleter = DeleteExport;
  PyObject* capsule = PyCapsule_New(&e->managed, kCapsuleName, DestroyCapsule);
  if (capsule == nullptr) throw py::error_already_set();
  e->owner = owner.inc_ref().ptr();
  e.release();  // the capsule, then the consumer, owns it
  return py::reinterpret_steal<py::object>(capsule);
}

}  // namespace hvd::python
