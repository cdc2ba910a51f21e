"""safetensors: `load_file(path, device="tpu")` and `safe_open(..., device="tpu:1")`.

safetensors parses device names in Rust against a fixed list that has no
'tpu' (it rejects "tpu" and "privateuseone" alike). For a 'tpu' device the
file is read on the host and each tensor is copied to the device, which is
what the library does for any device it cannot map memory into.
"""
from __future__ import annotations

import torch


def _tpu_device(device):
    if isinstance(device, torch.device):
        return device if device.type == "tpu" else None
    if isinstance(device, str) and device.split(":")[0] == "tpu":
        return torch.device(device)
    return None


class _SafeOpenOnTpu:
    """safe_open's interface; tensors read on the host, returned on `device`."""

    def __init__(self, opener, filename, framework, device, **kwargs):
        self._f = opener(filename, framework=framework, device="cpu", **kwargs)
        self._device = device

    def __enter__(self):
        self._f.__enter__()
        return self

    def __exit__(self, *exc):
        return self._f.__exit__(*exc)

    def get_tensor(self, name):
        return self._f.get_tensor(name).to(self._device)

    def get_tensors(self):
        return {k: v.to(self._device) for k, v in self._f.get_tensors().items()}

    def get_slice(self, name):
        sl, device = self._f.get_slice(name), self._device

        class _Slice:
            def __getitem__(self, index):
                return sl[index].to(device)

            def __getattr__(self, attr):
                return getattr(sl, attr)
        return _Slice()

    def __getattr__(self, attr):  # keys(), metadata(), offset_keys(), ...
        return getattr(self._f, attr)


def patch(module):
    original = getattr(module, "safe_open", None)
    if original is None or getattr(original, "_torch_tpu_patched", False):
        return

    def safe_open(filename, framework="pt", device="cpu", **kwargs):
        tpu = _tpu_device(device)
        if tpu is None:
            return original(filename, framework=framework, device=device, **kwargs)
        return _SafeOpenOnTpu(original, filename, framework, tpu, **kwargs)

    safe_open._torch_tpu_patched = True
    module.safe_open = safe_open  # load_file and load_model look it up in safetensors.torch
