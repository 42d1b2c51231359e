#include "output_buffers.h"

#include <Python.h>

#include "dlpack_export.h"

namespace py = pybind11;

namespace hvd::python {
namespace {

const RuntimeApi* g_free_api = nullptr;  // BindOutputBuffers' table

// hvd.torch's function from a CUDA device ordinal to the address of that device's current
// stream (set_stream_getter). A leaked reference: it may be called from a destructor during
// interpreter shutdown.
PyObject* g_stream_getter = nullptr;

// The calling thread's current stream of `device` by g_stream_getter, or 0 (the legacy default
// stream) when there is none or it fails (interpreter shutdown). GIL held.
uintptr_t CurrentStream(int32_t device) {
  if (g_stream_getter == nullptr || InterpreterFinalizing()) return 0;
  PyObject* result = PyObject_CallFunction(g_stream_getter, "i", static_cast<int>(device));
  uintptr_t stream = 0;
  if (result != nullptr) {
    stream = static_cast<uintptr_t>(PyLong_AsUnsignedLongLong(result));
    Py_DECREF(result);
  }
  if (PyErr_Occurred() != nullptr) {
    PyErr_Clear();  // a destructor must not raise: the legacy default stream instead
    stream = 0;
  }
  return stream;
}

size_t Bytes(hvd_dtype_t dtype, const std::vector<int64_t>& shape) {
  size_t bytes = ElementSize(dtype);
  for (int64_t extent : shape) bytes *= static_cast<size_t>(extent);
  return bytes;
}

}  // namespace

bool InterpreterFinalizing() {
#if PY_VERSION_HEX >= 0x030D0000
  return Py_IsFinalizing() != 0;
#else
  return _Py_IsFinalizing() != 0;
#endif
}

size_t ElementSize(hvd_dtype_t dtype) {
  switch (dtype) {
    case HVD_UINT8:
    case HVD_INT8:
    case HVD_BOOL:
      return 1;
    case HVD_UINT16:
    case HVD_INT16:
    case HVD_FLOAT16:
    case HVD_BFLOAT16:
      return 2;
    case HVD_INT32:
    case HVD_FLOAT32:
      return 4;
    case HVD_INT64:
    case HVD_FLOAT64:
      return 8;
  }
  return 0;
}

OutputBuffer::OutputBuffer(const hvd_tensor_t& tensor)
    : data_(tensor.data), dtype_(tensor.dtype), shape_(tensor.shape, tensor.shape + tensor.ndim) {
  nbytes_ = Bytes(dtype_, shape_);
}

OutputBuffer::~OutputBuffer() {
  if (data_ != nullptr) g_free_api->free(data_);
}

py::buffer_info OutputBuffer::Buffer() const {
  return py::buffer_info(data_, 1, py::format_descriptor<uint8_t>::format(), 1,
                         {static_cast<py::ssize_t>(nbytes_)}, {1}, /*readonly=*/false);
}

DeviceBuffer::DeviceBuffer(const hvd_tensor_t& tensor)
    : data_(tensor.data),
      dtype_(tensor.dtype),
      device_(tensor.device),
      shape_(tensor.shape, tensor.shape + tensor.ndim) {
  nbytes_ = Bytes(dtype_, shape_);
}

DeviceBuffer::~DeviceBuffer() {
  if (data_ != nullptr) {
    g_free_api->free_on_stream(data_, reinterpret_cast<void*>(CurrentStream(device_)));
  }
}

py::dict DeviceBuffer::Interface() const {
  py::dict d;
  d["shape"] = py::make_tuple(static_cast<py::ssize_t>(nbytes_));
  d["typestr"] = "|u1";
  d["data"] = py::make_tuple(reinterpret_cast<uintptr_t>(data_), false);
  d["strides"] = py::none();
  d["version"] = 3;
  d["stream"] = py::none();  // its handle completed: the device finished writing it
  return d;
}

void BindOutputBuffers(py::module_& m, const RuntimeApi* api) {
  g_free_api = api;
  py::class_<OutputBuffer>(m, "OutputBuffer", py::buffer_protocol())
      .def_buffer(&OutputBuffer::Buffer)
      .def_property_readonly("dtype", &OutputBuffer::dtype)
      .def_property_readonly("shape", &OutputBuffer::shape)
      .def_property_readonly("nbytes", &OutputBuffer::nbytes)
      .def_property_readonly("device", [](const OutputBuffer&) { return HVD_DEVICE_CPU; })
      .def(
          "__dlpack__",
          [](py::object self, py::object /*stream*/, py::object /*max_version*/,
             py::object dl_device, py::object copy) {
            const auto& b = self.cast<const OutputBuffer&>();
            return ExportDlpack(self, b.data(), b.dtype_code(), b.dims(), DlDevice::kCpu, 0,
                                dl_device, copy);
          },
          py::kw_only(), py::arg("stream") = py::none(), py::arg("max_version") = py::none(),
          py::arg("dl_device") = py::none(), py::arg("copy") = py::none(),
          "A DLPack capsule over this memory, without a copy (torch.from_dlpack(buffer))")
      .def("__dlpack_device__",
           [](const OutputBuffer&) { return py::make_tuple(static_cast<int>(DlDevice::kCpu), 0); });
  py::class_<DeviceBuffer>(m, "DeviceBuffer")
      .def_property_readonly("__cuda_array_interface__", &DeviceBuffer::Interface)
      .def_property_readonly("dtype", &DeviceBuffer::dtype)
      .def_property_readonly("device", &DeviceBuffer::device)
      .def_property_readonly("shape", &DeviceBuffer::shape)
      .def_property_readonly("nbytes", &DeviceBuffer::nbytes)
      .def(
          "__dlpack__",
          // `stream`: the memory is complete (its handle completed), nothing to wait for.
          [](py::object self, py::object /*stream*/, py::object /*max_version*/,
             py::object dl_device, py::object copy) {
            const auto& b = self.cast<const DeviceBuffer&>();
            return ExportDlpack(self, b.data(), b.dtype_code(), b.dims(), DlDevice::kCuda,
                                b.device(), dl_device, copy);
          },
          py::kw_only(), py::arg("stream") = py::none(), py::arg("max_version") = py::none(),
          py::arg("dl_device") = py::none(), py::arg("copy") = py::none(),
          "A DLPack capsule over this CUDA memory, without a copy: hvd.torch's way to a tensor "
          "(torch.utils.dlpack.from_dlpack(buffer.__dlpack__()))")
      .def("__dlpack_device__", [](const DeviceBuffer& b) {
        return py::make_tuple(static_cast<int>(DlDevice::kCuda), b.device());
      });
  m.def(
      "set_stream_getter",
      [](py::object getter) {
        Py_XDECREF(g_stream_getter);
        g_stream_getter = getter.is_none() ? nullptr : getter.inc_ref().ptr();
      },
      py::arg("getter"),
      "getter(device) -> address of the device's current CUDA stream: a DeviceBuffer's memory "
      "is freed in that stream's order when it dies (None: the legacy default stream)");
}

}  // namespace hvd::python
