"""torch.compile support: the Dynamo backend "tpu" (see backend.py for how it works).

    import torch, torch_tpu
    fn = torch.compile(fn, backend="tpu")     # or torch_tpu._compile.compile(fn)

Importing this package (done by `import torch_tpu`) does not import Dynamo:
the backend is registered when Dynamo's registry is first imported (_hook.py).
"""
from __future__ import annotations

from . import _hook
from .backend import bucket_refusals, replay_refusals, reset_stats, stats

__all__ = ["compile", "stats", "reset_stats", "replay_refusals", "bucket_refusals"]


def compile(fn, **kwargs):
    """`torch.compile(fn, backend="tpu", **kwargs)`."""
    import torch

    from .backend import _capturable_tpu_optimizers
    _capturable_tpu_optimizers()
    return torch.compile(fn, backend="tpu", **kwargs)


_hook.install()

from . import _default  # noqa: E402
_default.install()  # torch.compile(model) on 'tpu' tensors: our backend, not Inductor's Pallas path
