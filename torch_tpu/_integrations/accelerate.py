"""Hugging Face Accelerate: 'tpu' is the default device, as CUDA is where present.

Accelerate picks its device from a fixed list of accelerators (MPS, CUDA, NPU,
XPU, ...) and falls back to CPU, with no case for a PrivateUse1 backend. Left
alone, Transformers' ``Trainer`` (which does detect 'tpu' through
``torch.accelerator``) puts the batches on 'tpu' while Accelerate's
``prepare()`` moves the model back to the CPU, and the first step fails with a
device mismatch. The patch adds 'tpu' as the last accelerator before that CPU
fallback, so both libraries agree. ``cpu=True`` / ``use_cpu=True`` and
``ACCELERATE_TORCH_DEVICE`` still win, as they do over CUDA.
"""
from __future__ import annotations

import torch


def patch(state_module):
    cls = getattr(state_module, "PartialState", None)
    prop = getattr(cls, "default_device", None) if cls is not None else None
    if not isinstance(prop, property) or getattr(prop.fget, "_torch_tpu_patched", False):
        return
    stock = prop.fget

    def default_device(self):
        device = stock(self)
        if device.type == "cpu" and torch.accelerator.is_available() \
                and torch.accelerator.current_accelerator().type == "tpu":
            return torch.device("tpu")
        return device

    default_device._torch_tpu_patched = True
    default_device.__doc__ = stock.__doc__
    cls.default_device = property(default_device)
