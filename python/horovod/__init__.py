"""Compatibility package: ``import horovod.torch as hvd`` runs on hvd (see hvd.torch)."""
