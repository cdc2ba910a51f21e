"""Printing a 'tpu' tensor formats a host copy (printing is a sync point);
the device suffix still says 'tpu'."""
import torch
import torch._tensor_str as _ts

_original_tensor_str = _ts._tensor_str


def _tensor_str(self, indent):
    if self.device.type == "tpu":
        self = self.to("cpu")
    return _original_tensor_str(self, indent)


def install():
    if _ts._tensor_str is not _tensor_str:
        _ts._tensor_str = _tensor_str
