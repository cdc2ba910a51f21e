"""torch_tpu: a native PyTorch device backend, device type 'tpu', running every
op through the PJRT C API (libtpu on TPUs, the XLA CUDA plugin on NVIDIA GPUs,
the XLA CPU plugin everywhere else).

`import torch_tpu` (or PyTorch's backend autoload) registers the device.
Nothing is loaded onto a device until the first tensor is placed on one.
"""
from __future__ import annotations

__all__ = ["device_module", "compile_stats", "synchronize"]

_registered = False


def _autoload() -> None:
    """Entry point for torch's device-backend autoload (group 'torch.backends').

    Defined before `import torch`: importing torch_tpu first imports torch,
    whose autoload then finds this module half-initialised.
    """
    _register()


def _register() -> None:
    global _registered
    if _registered:
        return
    import torch  # may run the autoload entry point, which registers first

    if _registered:
        return
    from . import _C, _plugin, _printing, device_module

    path, platform, cpu_devices = _plugin.resolve()
    _C._set_plugin(path, platform, cpu_devices)
    # model.to('tpu') keeps Parameter identity (tied weights stay tied): see
    # csrc/aten/shallow_copy.cpp. "0" switches it off for a torch with the fix.
    import os
    _C._set_shallow_copy_fix(os.environ.get("TORCH_TPU_SHALLOW_COPY_FIX", "1") != "0")
    if torch._C._get_privateuse1_backend_name() != "tpu":
        torch.utils.rename_privateuse1_backend("tpu")
    torch._register_device_module("tpu", device_module)
    torch.utils.generate_methods_for_privateuse1_backend(
        for_tensor=True, for_module=True, for_storage=True, for_packed_sequence=True)
    _printing.install()
    from . import execution_mode
    execution_mode._init_from_env()
    execution_mode._install_backward_sync()
    from . import _fused_optim
    _fused_optim.install()
    from . import _integrations
    _integrations.install()
    if torch.distributed.is_available():
        from . import distributed
        distributed.install()  # c10d backend 'tpu' (torch_tpu/distributed.py)
    _registered = True


_register()

from .device_module import compile_stats, synchronize  # noqa: E402
from . import device_module  # noqa: E402
from . import execution_mode  # noqa: E402
from .execution_mode import defer_stats, sync  # noqa: E402
from . import _compile  # noqa: E402,F401  (torch.compile backend "tpu", registered when Dynamo loads)
