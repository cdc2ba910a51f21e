"""Dynamo's device interface for 'tpu' (torch._dynamo.device_interface).

Dynamo and the compilers above it ask a device's interface for its runtime:
the current device and stream, device counts, synchronisation, properties,
which dtypes it supports (a stream or event used inside a compiled function
is traced through it). torch ships a placeholder `TpuInterface` for an
out-of-tree 'tpu' backend (current device always 0, no float64/complex/half,
device_count unimplemented); this one answers from torch.tpu. It is
registered after Dynamo's own registration of the built-in interfaces, which
would otherwise put the placeholder back.
"""
from __future__ import annotations

from typing import Any

import torch


_QUANTIZED = {torch.qint8, torch.quint8, torch.qint32, torch.quint4x2, torch.quint2x4}


def _interface_class(base):
    tpu = torch.tpu

    class TpuDeviceInterface(base):
        device = tpu.device
        Event = torch.Event  # torch.tpu.Event(...) makes torch.Event instances
        Stream = torch.Stream

        class Worker:
            @staticmethod
            def set_device(device: int) -> None:
                tpu.set_device(device)

            @staticmethod
            def current_device() -> int:
                return tpu.current_device()

            @staticmethod
            def get_device_properties(device: Any = None) -> Any:
                return tpu.get_device_properties(device)

        current_device = staticmethod(tpu.current_device)
        set_device = staticmethod(tpu.set_device)
        device_count = staticmethod(tpu.device_count)
        is_available = staticmethod(tpu.is_available)
        synchronize = staticmethod(tpu.synchronize)
        current_stream = staticmethod(tpu.current_stream)
        set_stream = staticmethod(tpu.set_stream)
        stream = staticmethod(tpu.stream)
        memory_allocated = staticmethod(tpu.memory_allocated)

        @staticmethod
        def maybe_exchange_device(device: int) -> int:
            previous = tpu.current_device()
            if device >= 0 and device != previous:
                tpu.set_device(device)
            return previous

        @staticmethod
        def exchange_device(device: int) -> int:
            previous = tpu.current_device()
            if device != previous:
                tpu.set_device(device)
            return previous

        @staticmethod
        def _set_stream_by_id(stream_id: int, device_index: int, device_type: int) -> None:
            tpu.set_stream(torch.Stream(stream_id=stream_id, device_index=device_index, device_type=device_type))

        @staticmethod
        def get_raw_stream(device_idx: int) -> int:
            return tpu.current_stream(device_idx).stream_id

        @staticmethod
        def get_compute_capability(device: Any = None) -> int:
            major, minor = tpu.get_device_capability(device)
            return major * 10 + minor

        @staticmethod
        def is_bf16_supported(including_emulation: bool = False) -> bool:
            return tpu.is_bf16_supported(including_emulation)

        @classmethod
        def is_dtype_supported(cls, dtype: torch.dtype, including_emulation: bool = False) -> bool:
            # every dtype has device storage except the quantized ones (refused by name)
            return dtype not in _QUANTIZED

    TpuDeviceInterface.__name__ = TpuDeviceInterface.__qualname__ = "TpuDeviceInterface"
    return TpuDeviceInterface


def install(module) -> None:
    """Registers the interface into `module` (torch._dynamo.device_interface),
    now and after the module's lazy registration of the built-in ones."""
    cls = _interface_class(module.DeviceInterface)
    original = module.init_device_reg
    if getattr(original, "_torch_tpu", False):
        return

    def init_device_reg() -> None:
        original()
        module.register_interface_for_device("tpu", cls)

    init_device_reg._torch_tpu = True
    module.init_device_reg = init_device_reg
    module.register_interface_for_device("tpu", cls)
