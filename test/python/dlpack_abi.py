"""DLPack's unversioned C structs (dlpack.h 0.x) read through ctypes, and a consumer's taking of
a "dltensor" capsule: for tests that look inside the capsules hvd's output buffers export."""
import ctypes


class DLManagedTensor(ctypes.Structure):  # DLTensor's fields, then manager_ctx and deleter
    _fields_ = [("data", ctypes.c_void_p), ("device_type", ctypes.c_int32),
                ("device_id", ctypes.c_int32), ("ndim", ctypes.c_int32),
                ("code", ctypes.c_uint8), ("bits", ctypes.c_uint8), ("lanes", ctypes.c_uint16),
                ("shape", ctypes.POINTER(ctypes.c_int64)),
                ("strides", ctypes.POINTER(ctypes.c_int64)), ("byte_offset", ctypes.c_uint64),
                ("manager_ctx", ctypes.c_void_p), ("deleter", ctypes.c_void_p)]


def take(capsule):
    """Consumes `capsule` as a DLPack consumer does (renamed "used_dltensor": its destructor
    then leaves the tensor alone). Returns its address and the DLManagedTensor there, whose
    deleter the caller must call (`delete`)."""
    api = ctypes.pythonapi
    api.PyCapsule_GetPointer.restype = ctypes.c_void_p
    api.PyCapsule_GetPointer.argtypes = [ctypes.py_object, ctypes.c_char_p]
    api.PyCapsule_SetName.argtypes = [ctypes.py_object, ctypes.c_char_p]
    address = api.PyCapsule_GetPointer(capsule, b"dltensor")
    assert api.PyCapsule_SetName(capsule, b"used_dltensor") == 0
    return address, DLManagedTensor.from_address(address)


def deleter(managed):
    """The capsule's deleter as a function of its address; ctypes releases the GIL around the
    call, as a consumer freeing the tensor on another thread would."""
    return ctypes.CFUNCTYPE(None, ctypes.c_void_p)(managed.deleter)
