"""Small shims that let third-party libraries take 'tpu' where they take 'cuda'.

Each shim patches its library when the library is imported (or at once, if it
already was), never importing it itself.
"""
from __future__ import annotations

import importlib.abc
import importlib.util
import sys

_PATCHERS = {}  # module name -> function(module)


def _patch_when_imported(name, patch):
    _PATCHERS[name] = patch
    if name in sys.modules:
        patch(sys.modules[name])


class _Finder(importlib.abc.MetaPathFinder):
    """Runs a patcher right after its module finishes loading."""

    def find_spec(self, fullname, path, target=None):
        if fullname not in _PATCHERS:
            return None
        sys.meta_path.remove(self)  # find the real spec without recursing into ourselves
        try:
            spec = importlib.util.find_spec(fullname)
        finally:
            sys.meta_path.insert(0, self)
        if spec is None or spec.loader is None:
            return spec
        loader = spec.loader
        exec_module = loader.exec_module

        def exec_and_patch(module):
            exec_module(module)
            _PATCHERS[fullname](module)

        loader.exec_module = exec_and_patch
        return spec


def install():
    from . import ipc as _ipc
    _ipc.install()
    from . import dlpack as _dlpack
    _dlpack.install()
    from . import safetensors as _st
    # The package defines safe_open; safetensors.torch imports it from there.
    _patch_when_imported("safetensors", _st.patch)
    _patch_when_imported("safetensors.torch", _st.patch)
    from . import accelerate as _acc
    _patch_when_imported("accelerate.state", _acc.patch)
    from . import flex_attention as _flex
    _patch_when_imported("torch.nn.attention.flex_attention", _flex.patch)
    from . import torchao as _ao
    _patch_when_imported("torchao.quantization.quant_api", _ao.patch)
    _patch_when_imported("torchao.prototype.mx_formats.inference_workflow", _ao.patch_mx_inference)
    if not any(isinstance(f, _Finder) for f in sys.meta_path):
        sys.meta_path.insert(0, _Finder())
