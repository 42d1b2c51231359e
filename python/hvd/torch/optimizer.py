"""DistributedOptimizer: averages gradients across ranks while backward runs (Horovod's
horovod.torch.optimizer).

A hook on each parameter's gradient accumulator starts an asynchronous allreduce as soon as
that gradient is ready, so communication overlaps the rest of the backward pass; step()
(or synchronize()) waits for them and writes the results into ``p.grad``.
"""
import os
import warnings
from contextlib import contextmanager
from typing import Dict, List

import torch

from hvd.basics import Adasum, Average, size
from hvd.process_sets import ProcessSet, global_process_set
from hvd.torch.compression import Compression
from hvd.torch.mpi_ops import (_forget, allreduce_async_, grouped_allreduce_async_, poll,
                               sparse_allreduce_async, synchronize)


def _find_duplicates(names: List[str]) -> List[str]:
    seen, dups = set(), set()
    for name in names:
        if name in seen:
            dups.add(name)
        seen.add(name)
    return sorted(dups)


def _split_list(items: list, parts: int) -> List[list]:
    base, extra = divmod(len(items), parts)
    out, start = [], 0
    for i in range(parts):
        end = start + base + (1 if i < extra else 0)
        if end > start:
            out.append(items[start:end])
        start = end
    return out


def _checked_named_parameters(param_groups, named_parameters) -> list:
    """`named_parameters` as a list of (name, parameter), checked as Horovod checks it; names
    made from the param groups' order when it is None."""
    if named_parameters is not None:
        named_parameters = list(named_parameters)
    else:
        named_parameters = [(f"allreduce.noname.{i}.{j}", v)
                            for i, group in enumerate(param_groups)
                            for j, v in enumerate(group["params"])]
    if any(not isinstance(p, tuple) for p in named_parameters):
        raise ValueError("named_parameters should be a sequence of tuples (name, parameter), "
                         "usually produced by model.named_parameters().")
    dups = _find_duplicates([k for k, _ in named_parameters])
    if dups:
        raise ValueError("Parameter names in named_parameters must be unique. "
                         "Found duplicates: %s" % ", ".join(dups))
    all_param_ids = {id(v) for group in param_groups for v in group["params"]}
    named_param_ids = {id(v) for _, v in named_parameters}
    unnamed = all_param_ids - named_param_ids
    if unnamed:
        raise ValueError("named_parameters was specified, but one or more model parameters "
                         "were not named. Python object ids: "
                         "%s" % ", ".join(str(i) for i in sorted(unnamed)))
    return named_parameters


def _hooks_wanted(process_set: ProcessSet) -> bool:
    """Gradient hooks only where there is someone to reduce with (or may be, elastic)."""
    return process_set.included() and (size() > 1 or os.environ.get("HOROVOD_ELASTIC") == "1" or
                                       os.environ.get("HVD_ELASTIC") == "1")


class _HookedOptimizer(torch.optim.Optimizer):
    """What both flavours of DistributedOptimizer share: a hook per parameter that starts its
    allreduce (``_allreduce_grad_async``; a group's ``_grouped_allreduce_grad_async`` once all
    of it is ready) after ``backward_passes_per_step`` passes, and the bookkeeping around it.
    Its methods are copied into the dynamic subclass with the flavour's (_mixed_in)."""

    def _setup(self, named_parameters, compression, backward_passes_per_step):
        """The state both flavours keep; called first by their __init__."""
        self._compression = compression
        named_parameters = _checked_named_parameters(self.param_groups, named_parameters)
        self._parameter_names = {v: k for k, v in sorted(named_parameters, key=lambda kv: kv[0])}
        self.backward_passes_per_step = backward_passes_per_step
        self._allreduce_delay = {v: backward_passes_per_step for _, v in named_parameters}
        self._handles: Dict = {}
        self._grad_accs = []
        self._requires_update = set()
        self._synchronized = False
        self._should_synchronize = True

    def load_state_dict(self, *args, **kwargs):
        self._handles = {}
        self._synchronized = False
        self._should_synchronize = True
        for p in self._allreduce_delay:
            self._allreduce_delay[p] = self.backward_passes_per_step
        # Groups half counted when a step failed (an elastic restore loads the state): left
        # so, the next step fired a group at its first member's gradient, while backward was
        # still computing the others (a TypeError on torch 2's None gradients).
        for group in getattr(self, "_group_counts", {}):
            self._group_counts[group] = 0
        super(self.__class__, self).load_state_dict(*args, **kwargs)

    def set_backward_passes_per_step(self, passes: int) -> None:
        self.backward_passes_per_step = passes
        for p in self._allreduce_delay:
            self._allreduce_delay[p] = passes

    def _register_grad_hooks(self):
        for group in self.param_groups:
            for p in group["params"]:
                if p.requires_grad:
                    self._requires_update.add(p)
                    grad_acc = p.expand_as(p).grad_fn.next_functions[0][0]
                    grad_acc.register_hook(self._make_hook(p))
                    self._grad_accs.append(grad_acc)

    def _make_hook(self, p):
        def hook(*ignore):
            if p in self._handles and self._handles[p][0] is not None:
                if self._allreduce_delay[p] <= 0:
                    raise AssertionError(
                        "Gradients were computed more than backward_passes_per_step times "
                        "before call to step(). Increase backward_passes_per_step to "
                        "accumulate gradients locally.")
            assert not p.grad.requires_grad
            assert self._allreduce_delay[p] > 0
            handle, ctx = None, None
            self._allreduce_delay[p] -= 1
            if self._allreduce_delay[p] == 0:
                if self._groups is not None:
                    group = self._p_to_group[p]
                    self._group_counts[group] += 1
                    if self._group_counts[group] == len(group):
                        self._handles[group] = self._grouped_allreduce_grad_async(group)
                        for gp in group:
                            self._handles.pop(gp, None)
                        self._group_counts[group] = 0
                        return
                else:
                    handle, ctx = self._allreduce_grad_async(p)
            self._handles[p] = (handle, ctx)
        return hook

    @contextmanager
    def skip_synchronize(self):
        """Lets step() skip synchronize() after an explicit one (e.g. for gradient clipping)."""
        self._should_synchronize = False
        try:
            yield
        finally:
            self._should_synchronize = True

    def _synchronize_for_step(self):
        if self._should_synchronize:
            if self._synchronized:
                warnings.warn("optimizer.step() called without optimizer.skip_synchronize() "
                              "context after optimizer.synchronize(). This can cause training "
                              "slowdown. You may want to consider using "
                              "optimizer.skip_synchronize() context if you use "
                              "optimizer.synchronize() in your code.")
            self.synchronize()
        self._synchronized = False

    def _hvd_base_step(self, closure=None):
        """The wrapped optimizer's own step(), without any allreduce (broadcast_optimizer_state
        uses it to create a fresh optimizer's state)."""
        return super(self.__class__, self).step(closure)

    def __del__(self):
        # Handles never synchronized (a zero_grad() that raised, an optimizer dropped between
        # backward and step) keep their gradients' names reserved for the rest of the process
        # (docs/python.md), and a new optimizer of the same model could not allreduce them.
        # Those whose op completed are released; one still running is left as it is (its
        # tensors must stay alive, and waiting for it here could block).
        for handle, _ in list(getattr(self, "_handles", {}).values()):
            try:
                if handle is not None and poll(handle):
                    _forget(handle)
            except Exception:  # shut down already, or at interpreter exit
                pass

    def zero_grad(self, *args, **kwargs):
        # The arguments go through as given, so a bare zero_grad() keeps the wrapped optimizer's
        # own default, as Horovod's does: torch >= 2.0 sets the gradients to None (set_to_none
        # defaults to True there), torch 1.x zeroes them. Zeroing instead costs a training step
        # one fill and one accumulate kernel per parameter (backward adds into a zeroed gradient
        # where it would take its buffer as the gradient).
        if self._handles:
            raise AssertionError("optimizer.zero_grad() was called after loss.backward() but "
                                 "before optimizer.step() or optimizer.synchronize(). This is "
                                 "prohibited as it can cause a race condition.")
        return super(self.__class__, self).zero_grad(*args, **kwargs)


def _mixed_in(optimizer: torch.optim.Optimizer, flavour: type) -> type:
    """A subclass of `optimizer`'s class with _HookedOptimizer's and `flavour`'s methods."""
    methods = {**_HookedOptimizer.__dict__, **flavour.__dict__}
    return type(optimizer.__class__.__name__, (optimizer.__class__,), methods)


class _DistributedOptimizer(_HookedOptimizer):
    """Mixed into a dynamic subclass of the wrapped optimizer's class; see
    DistributedOptimizer. Not thread-safe: one training loop drives it."""

    def __init__(self, params, named_parameters, compression, backward_passes_per_step=1,
                 op=Average, gradient_predivide_factor=1.0, groups=None, sparse_as_dense=False,
                 process_set=global_process_set):
        super(self.__class__, self).__init__(params)
        self._setup(named_parameters, compression, backward_passes_per_step)
        self.op = op
        self.gradient_predivide_factor = gradient_predivide_factor
        self.sparse_as_dense = sparse_as_dense
        self.process_set = process_set

        if groups is not None:
            if not (isinstance(groups, list) or (isinstance(groups, int) and groups > 0)):
                raise ValueError("groups should be a non-negative integer or a list of list of "
                                 "torch.Tensor.")
            if isinstance(groups, list):
                grouped_ids = set()
                for group in groups:
                    for p in group:
                        if not isinstance(p, torch.Tensor):
                            raise ValueError("groups must consist of torch.Tensor.")
                        if id(p) in grouped_ids:
                            raise ValueError("A parameter can only appear once in groups.")
                        grouped_ids.add(id(p))
        self._groups = groups
        self._p_to_group = {}
        self._group_counts = {}

        if _hooks_wanted(self.process_set):
            self._register_hooks()

    def _register_hooks(self):
        if self._groups is not None:
            # The optimizer's parameter order: the same on every rank for the same model, so every
            # rank forms the same groups. Horovod broadcasts rank 0's order here; hvd does not
            # (until 2026-12-02 it did too): a collective in the constructor stalled a worker
            # joining an elastic job, whose peers were in their state sync by then.
            p_list = [p for group in self.param_groups for p in group["params"] if p.requires_grad]
            if isinstance(self._groups, list):
                p_ids = {id(p) for p in p_list}
                p_groups = [[p for p in group if id(p) in p_ids] for group in self._groups]
                grouped = {id(p) for group in p_groups for p in group}
                p_groups = [g for g in p_groups if g]
                p_groups += [[p] for p in p_list if id(p) not in grouped]
            else:
                p_groups = _split_list(p_list, self._groups)
            for group in map(tuple, p_groups):
                for p in group:
                    self._p_to_group[p] = group
                self._group_counts[group] = 0

        self._register_grad_hooks()

    def _scale_factors(self):
        if self.op == Average:
            # The runtime applies 1/size on top of postscale for Average.
            return 1.0 / self.gradient_predivide_factor, self.gradient_predivide_factor
        return 1.0, 1.0

    def _allreduce_grad_async(self, p):
        if p.grad is None:
            # Another rank may have a gradient for p (dynamic graphs): still take part.
            p.grad = p.data.new(p.size()).zero_()
        name = self._parameter_names.get(p)
        tensor = p.grad
        if tensor.is_sparse:
            if not self.sparse_as_dense:
                return sparse_allreduce_async(tensor, name=name, op=self.op,
                                              process_set=self.process_set), None
            tensor = tensor.to_dense()
        compressed, ctx = self._compression.compress(tensor)
        prescale, postscale = self._scale_factors()
        handle = allreduce_async_(compressed, name=name, op=self.op, prescale_factor=prescale,
                                  postscale_factor=postscale, process_set=self.process_set)
        return handle, ctx

    def _grouped_allreduce_grad_async(self, ps):
        name = self._parameter_names.get(ps[0])
        compressed, ctxs = zip(*[self._compression.compress(p.grad) for p in ps])
        prescale, postscale = self._scale_factors()
        handle = grouped_allreduce_async_(list(compressed), name=name, op=self.op,
                                          prescale_factor=prescale, postscale_factor=postscale,
                                          process_set=self.process_set)
        return handle, ctxs

    def synchronize(self):
        """Waits for every gradient allreduce and writes the results into ``p.grad``;
        starts the ones whose hook did not fire (unused parameters)."""
        if not self.process_set.included():
            self._synchronized = True
            return
        completed = set()
        for key in self._handles:
            completed.update(key) if isinstance(key, tuple) else completed.add(key)
        for p in self._requires_update - completed:
            if self._groups is not None and p in self._p_to_group:
                group = self._p_to_group[p]
                if group in self._handles:
                    continue
                for gp in group:
                    if gp.grad is None:
                        gp.grad = gp.data.new(gp.size()).zero_()
                self._handles[group] = self._grouped_allreduce_grad_async(group)
                for gp in group:
                    self._handles.pop(gp, None)
                self._group_counts[group] = 0
                completed.update(group)
            else:
                self._handles[p] = self._allreduce_grad_async(p)
        for p, (handle, ctx) in list(self._handles.items()):
            if handle is None:
                self._handles[p] = self._allreduce_grad_async(p)
        for p, (handle, ctx) in self._handles.items():
            if isinstance(p, tuple):
                outputs = synchronize(handle)
                for gp, output, gctx in zip(p, outputs, ctx):
                    self._allreduce_delay[gp] = self.backward_passes_per_step
                    gp.grad.set_(self._compression.decompress(output, gctx))
                if self._groups is not None:
                    self._group_counts[p] = 0
            else:
                output = handle() if callable(handle) else synchronize(handle)
                self._allreduce_delay[p] = self.backward_passes_per_step
                if self._groups is not None and p in self._p_to_group:
                    # A group member reduced on its own (the group was not complete when its
                    # hook fired): the group starts counting again, as Horovod's does. Left
                    # counting, the group fired in the next step at its first member's hook, in
                    # place while backward still added into the others' gradients.
                    self._group_counts[self._p_to_group[p]] = 0
                if p.grad.is_sparse:
                    aggregated = self._compression.decompress(output, ctx)
                    if not aggregated.is_sparse:
                        aggregated = aggregated.to_sparse()
                    p.grad.zero_().add_(aggregated)
                else:
                    p.grad.set_(self._compression.decompress(output, ctx))
        self._handles.clear()
        self._synchronized = True

    def step(self, closure=None):
        self._synchronize_for_step()
        return super(self.__class__, self).step(closure)

    # torch wraps an optimizer class's step() when the first optimizer of the class is made
    # (Optimizer.profile_hook_step: a profiler record_function and, from torch 2.0, the step
    # pre- and post-hooks), unless the step says it is wrapped already. This step calls the
    # wrapped optimizer's, which is: wrapped again, every step was recorded twice and, on torch
    # 2.x, ran every step hook twice (an EMA post-hook updated twice). Horovod's does that.
    step.hooked = True


class _DistributedAdasumOptimizer(_HookedOptimizer):
    """op=Adasum (Horovod's delta optimizer). Adasum combines model updates, not gradients: when
    a parameter's gradient is ready (its hook), the wrapped optimizer steps that parameter alone
    from a saved copy of it, the update (new - old) is allreduced with op=Adasum while backward
    goes on, and step() sets the parameter to the copy plus the combined update. step() therefore
    does not step the wrapped optimizer again, and synchronize() does nothing (as Horovod's).
    With a process set (Horovod: the global set only), its members combine their updates among
    themselves and a rank outside it steps the wrapped optimizer alone, as the other flavour
    leaves such a rank's gradients as they are."""

    def __init__(self, params, named_parameters, compression, backward_passes_per_step=1,
                 process_set=global_process_set):
        super(self.__class__, self).__init__(params)
        self._setup(named_parameters, compression, backward_passes_per_step)
        self._starts = {}  # parameter -> its value before this step's update
        self._groups = None  # no explicit fusion groups: each update on its own
        self.process_set = process_set
        if _hooks_wanted(process_set):
            self._register_grad_hooks()

    def _step_alone(self, p):
        """The wrapped optimizer's step() on `p` only (its state, e.g. momentum, kept as usual).

        Its own step, under the wrapper torch puts on each optimizer class's step (a profiler
        record, and torch 2.x's step hooks): those run once, at this optimizer's step(), as for
        the other flavour, not once per parameter. (Horovod's runs them per parameter too.)"""
        stashed = [group["params"] for group in self.param_groups]
        for group in self.param_groups:
            group["params"] = [p] if any(p is v for v in group["params"]) else []
        step = super(self.__class__, self).step
        inner = getattr(step, "__wrapped__", None) if getattr(step, "hooked", False) else None
        try:
            inner(self) if inner is not None else step()
        finally:
            for group, params in zip(self.param_groups, stashed):
                group["params"] = params

    def _allreduce_grad_async(self, p):
        """Steps `p` alone and starts the Adasum allreduce of its update. A parameter without a
        gradient (None: unused in this step's forward) is left to the wrapped optimizer, which
        skips it, so its update is zero, as in Horovod's delta optimizer; until 2026-12-01 its
        gradient was filled with zeros, as the other flavour's allreduce needs, and weight decay,
        momentum or Adam's moments still moved it."""
        start = self._starts.get(p)
        if start is None:
            start = self._starts[p] = torch.empty_like(p.data)
        with torch.no_grad():
            start.copy_(p.data)
            self._step_alone(p)
            p.data.sub_(start)  # p holds its update until step()
        compressed, ctx = self._compression.compress(p.data)
        handle = allreduce_async_(compressed, name=self._parameter_names.get(p), op=Adasum,
                                  process_set=self.process_set)
        return handle, ctx

    def synchronize(self):
        """Does nothing, as Horovod's: the hooks already used the gradients to step each
        parameter, so there is nothing left to synchronize before step() (which combines and
        applies the updates). Until 2026-11-30 this applied them, and a step() after it (the
        gradient-clipping pattern: synchronize(), clip, step()) stepped every parameter again."""

    @contextmanager
    def skip_synchronize(self):
        raise AssertionError("Skipping synchronization is not supported when using Adasum "
                             "optimizer.")

    def _combine_updates(self):
        """Waits for every update's Adasum allreduce and applies the combined updates; starts
        the ones whose hook did not fire (unused parameters, with a zero gradient)."""
        for p in self._requires_update - set(self._handles):
            self._handles[p] = self._allreduce_grad_async(p)
        for p, (handle, ctx) in list(self._handles.items()):
            if handle is None:
                self._handles[p] = self._allreduce_grad_async(p)
        for p, (handle, ctx) in self._handles.items():
            delta = self._compression.decompress(synchronize(handle), ctx)
            self._allreduce_delay[p] = self.backward_passes_per_step
            with torch.no_grad():
                start = self._starts[p]
                start.add_(delta.to(start.dtype))
                p.data.copy_(start)
        self._handles.clear()

    def step(self, closure=None):
        if not self.process_set.included():  # no hooks stepped it: the plain step
            return super(self.__class__, self).step(closure)
        loss = closure() if closure is not None else None
        self._combine_updates()
        return loss


def DistributedOptimizer(optimizer: torch.optim.Optimizer, named_parameters=None,
                         compression=Compression.none, backward_passes_per_step: int = 1,
                         op: int = Average, gradient_predivide_factor: float = 1.0,
                         num_groups: int = 0, groups=None, sparse_as_dense: bool = False,
                         process_set: ProcessSet = global_process_set):
    """Wraps `optimizer` so that step() applies gradients averaged over all ranks.

    The result is an instance of a subclass of the optimizer's own class, sharing its
    param_groups. named_parameters (from ``model.named_parameters()``) gives the names every
    rank uses for the allreduces; backward_passes_per_step > 1 accumulates gradients locally
    between allreduces; groups (an int, or lists of parameters) fuses allreduces explicitly.
    op=Adasum combines each parameter's update with Adasum instead (see
    _DistributedAdasumOptimizer).
    """
    if gradient_predivide_factor != 1.0 and op != Average:
        raise ValueError("gradient_predivide_factor not supported with op != Average")
    if op == Adasum and size() > 1:  # one rank: the plain optimizer, as Horovod
        cls = _mixed_in(optimizer, _DistributedAdasumOptimizer)
        return cls(optimizer.param_groups, named_parameters, compression,
                   backward_passes_per_step, process_set)
    if num_groups != 0:
        warnings.warn("Parameter `num_groups` has been replaced by `groups`.", DeprecationWarning)
        if groups is None:
            groups = num_groups
    cls = _mixed_in(optimizer, _DistributedOptimizer)
    return cls(optimizer.param_groups, named_parameters, compression, backward_passes_per_step,
               op, gradient_predivide_factor, groups, sparse_as_dense, process_set)
