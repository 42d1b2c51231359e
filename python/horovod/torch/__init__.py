"""horovod.torch is hvd.torch: the same module objects, registered under Horovod's names.

Every ``hvd.torch.*`` module is entered in sys.modules as ``horovod.torch.*`` so that
``horovod.torch.elastic``, ``horovod.torch.mpi_ops`` and friends are the very modules (and
classes) of hvd.torch, not copies.
"""
import sys

import hvd.torch
import hvd.torch.elastic.sampler
import hvd.torch.elastic.state

for _name, _module in list(sys.modules.items()):
    if _name == "hvd.torch" or _name.startswith("hvd.torch."):
        sys.modules["horovod" + _name[len("hvd"):]] = _module
del _name, _module

sys.modules[__name__] = hvd.torch
