"""Registers the torch.compile backend "tpu" (and Dynamo's device interface
for 'tpu', device_interface.py) without importing Dynamo.

Importing torch._dynamo costs about 1.6 s, so `import torch_tpu` must not do
it. Dynamo keeps its backends in torch._dynamo.backends.registry; that module
is imported by `torch.compile` (and by anything that imports torch._dynamo).
If it is already imported we register at once; otherwise a one-shot import
hook (a sys.meta_path finder) lets the normal import of that module run and
registers right after the module has executed, before anyone can look a
backend up in it.

Dynamo's other discovery path, the `torch_dynamo_backends` entry-point group
(read from the installed package metadata by registry._discover_entrypoint_backends),
needs the package reinstalled after pyproject.toml changes; this hook works
either way, and an entry point added later does not conflict (lookup_backend
prefers a name that is already registered).
"""
from __future__ import annotations

import importlib.abc
import sys

BACKEND_NAME = "tpu"
_REGISTRY = "torch._dynamo.backends.registry"


def _register_into(registry) -> None:
    if BACKEND_NAME in registry._COMPILER_FNS:
        return
    from .backend import tpu_backend  # imports nothing from Dynamo at module level

    registry.register_backend(compiler_fn=tpu_backend, name=BACKEND_NAME)


_DEVICE_INTERFACE = "torch._dynamo.device_interface"


def _register_interface_into(module) -> None:
    from .device_interface import install
    install(module)


# module -> what to do right after it has executed
_AFTER = {_REGISTRY: _register_into, _DEVICE_INTERFACE: _register_interface_into}


class _RegisterAfterImport(importlib.abc.MetaPathFinder):
    """Finds a watched module through the other finders and wraps its
    loader's exec_module so that ours is registered right after it."""

    def find_spec(self, fullname, path, target=None):
        if fullname not in _AFTER or fullname in _done:
            return None
        spec = None
        for finder in list(sys.meta_path):
            if finder is self or not hasattr(finder, "find_spec"):
                continue
            spec = finder.find_spec(fullname, path, target)
            if spec is not None:
                break
        if spec is None or spec.loader is None or not hasattr(spec.loader, "exec_module"):
            return None
        loader = spec.loader
        exec_module = loader.exec_module

        def exec_module_then_register(module):
            exec_module(module)
            _done.add(fullname)
            if len(_done) == len(_AFTER):
                _remove_hook()
            try:
                del loader.exec_module  # back to the class's method
            except AttributeError:
                pass
            _AFTER[fullname](module)

        try:
            loader.exec_module = exec_module_then_register
        except (AttributeError, TypeError):  # a loader that refuses attributes
            return None
        return spec


_hook = _RegisterAfterImport()
_done: set = set()


def _remove_hook() -> None:
    try:
        sys.meta_path.remove(_hook)
    except ValueError:
        pass


def install() -> None:
    """Registers the backend "tpu" and Dynamo's device interface for 'tpu' now
    where their modules are loaded, else when they load."""
    registry = sys.modules.get(_REGISTRY)
    if registry is not None and hasattr(registry, "register_backend"):
        _register_into(registry)
        _done.add(_REGISTRY)
    interfaces = sys.modules.get(_DEVICE_INTERFACE)
    if interfaces is not None and hasattr(interfaces, "register_interface_for_device"):
        _register_interface_into(interfaces)
        _done.add(_DEVICE_INTERFACE)
    if len(_done) < len(_AFTER) and _hook not in sys.meta_path:
        sys.meta_path.insert(0, _hook)
