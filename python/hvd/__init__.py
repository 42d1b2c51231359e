"""hvd: Horovod-compatible distributed training on the native hvd runtime (libhvd).

Frameworks: ``hvd.torch`` (PyTorch, the Horovod API) and ``hvd.numpy``. Importing either
loads the runtime library; see docs/python.md for how it is found.
"""
