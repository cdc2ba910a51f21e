"""Eager execution modes, one API for all (names of TorchTPU's API accepted too).

    import torch_tpu
    from torch_tpu.execution_mode import EagerMode, set_eager_mode, eager_mode

    set_eager_mode(EagerMode.DEBUG)            # as a call ...
    with set_eager_mode(EagerMode.DEBUG): ...  # ... or as a context manager
    with eager_mode(EagerMode.STRICT): ...

STRICT (alias DEFER_NEVER, the default): each op runs its cached executable
asynchronously. DEBUG (alias DEFER_NEVER_AND_LAUNCH_BLOCKING): every op waits
for its own completion, so a failure is raised at the op (and Python line)
that caused it; TORCH_TPU_DEBUG_NANS=1 also rejects NaN/Inf results.
DEFER_AND_FUSE: ops are recorded, not run; at a sync point (a value's data
is needed: .cpu(), .item(), print, torch.save; torch.tpu.synchronize();
torch_tpu.sync(); the end of backward() and autograd.grad(); leaving the
mode; a graph-size threshold) the pending ops
run as one fused, cached executable. Ops without a recordable lowering (view
gathers/scatters, copies) still run eagerly and are sync points for their
inputs.

The mode is process-wide (a C++ atomic), so autograd's device thread, which
runs backward, sees it too. Environment: TORCH_TPU_LAUNCH_BLOCKING=1 or
TPU_LAUNCH_BLOCKING=1 start in DEBUG; TORCH_TPU_DEFER_AND_FUSE=1 or
TPU_DEFER_AND_FUSE=1 ask for DEFER_AND_FUSE.
"""
from __future__ import annotations

import enum
import functools
import os

from . import _C


class EagerMode(enum.Enum):
    STRICT = 0
    DEBUG = 1
    DEFER_AND_FUSE = 2
    # TorchTPU's names for the same modes
    DEFER_NEVER = 0
    DEFER_NEVER_AND_LAUNCH_BLOCKING = 1


class _ModeGuard:
    """Returned by set_eager_mode: the mode is already set; leaving a `with`
    block restores the previous one."""

    def __init__(self, previous: EagerMode):
        self.previous = previous

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        _apply(self.previous)
        return False


def _apply(mode: EagerMode) -> None:
    _C._set_mode(mode.value)


def get_eager_mode() -> EagerMode:
    return EagerMode(_C._get_mode())


def set_eager_mode(mode: EagerMode) -> _ModeGuard:
    if not isinstance(mode, EagerMode):
        raise TypeError(f"torch_tpu: expected an EagerMode, got {mode!r}")
    previous = get_eager_mode()
    _apply(mode)
    return _ModeGuard(previous)


def eager_mode(mode: EagerMode) -> _ModeGuard:
    return set_eager_mode(mode)


def sync() -> None:
    """Runs everything recorded in DeferAndFuse mode now (no-op otherwise)."""
    _C._flush()


def defer_stats() -> dict:
    """Graphs executed, ops recorded, values materialised/dropped, syncs by reason."""
    return _C.defer_stats()


def _sync_after(fn, reason):
    """Wraps an autograd entry point so that, in DEFER_AND_FUSE, the graph
    recorded by the backward pass runs when it returns."""
    @functools.wraps(fn)
    def wrapper(*args, **kwargs):
        result = fn(*args, **kwargs)
        if _C._get_mode() == EagerMode.DEFER_AND_FUSE.value:
            _C._flush(reason)
        return result
    wrapper._torch_tpu_wrapped = True
    return wrapper


def _install_backward_sync() -> None:
    import torch.autograd
    for name in ("backward", "grad"):
        fn = getattr(torch.autograd, name)
        if not getattr(fn, "_torch_tpu_wrapped", False):
            setattr(torch.autograd, name, _sync_after(fn, f"end of {name}()"))


def _init_from_env() -> None:
    def on(name):
        return os.environ.get(name, "") not in ("", "0")
    _C._set_debug_nans(on("TORCH_TPU_DEBUG_NANS"))
    if on("TORCH_TPU_DEFER_AND_FUSE") or on("TPU_DEFER_AND_FUSE"):
        _C._set_mode(EagerMode.DEFER_AND_FUSE.value)
    if on("TORCH_TPU_LAUNCH_BLOCKING") or on("TPU_LAUNCH_BLOCKING"):
        _C._set_mode(EagerMode.DEBUG.value)
