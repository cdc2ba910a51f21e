"""`torch.tpu.amp`: the helpers torch.cuda.amp offers, for device 'tpu'.

``torch.tpu.amp.autocast(dtype=...)`` is ``torch.autocast("tpu", ...)`` and
``torch.tpu.amp.GradScaler(...)`` is ``torch.amp.GradScaler("tpu", ...)``;
both work in every execution mode and under ``torch.compile(backend="tpu")``.
The scaler's unscale and scale update run on the device
(``_amp_foreach_non_finite_check_and_unscale_`` and ``_amp_update_scale_``
lowerings, csrc/ops/amp.cc); as on CUDA, ``scaler.step`` reads whether an
inf was found, one host read per step.
"""
from __future__ import annotations

import torch

__all__ = ["autocast", "GradScaler", "custom_fwd", "custom_bwd"]


class autocast(torch.amp.autocast_mode.autocast):
    """``torch.autocast("tpu", ...)`` with torch.cuda.amp.autocast's signature."""

    def __init__(self, enabled: bool = True, dtype: torch.dtype = torch.float16, cache_enabled: bool = True):
        super().__init__("tpu", enabled=enabled, dtype=dtype, cache_enabled=cache_enabled)


class GradScaler(torch.amp.GradScaler):
    """``torch.amp.GradScaler("tpu", ...)`` with torch.cuda.amp.GradScaler's signature."""

    def __init__(self, init_scale: float = 2.0**16, growth_factor: float = 2.0, backoff_factor: float = 0.5,
                 growth_interval: int = 2000, enabled: bool = True) -> None:
        super().__init__("tpu", init_scale=init_scale, growth_factor=growth_factor,
                         backoff_factor=backoff_factor, growth_interval=growth_interval, enabled=enabled)


def custom_fwd(fwd=None, *, cast_inputs=None):
    return torch.amp.custom_fwd(fwd, device_type="tpu", cast_inputs=cast_inputs)


def custom_bwd(bwd=None):
    return torch.amp.custom_bwd(bwd, device_type="tpu")
