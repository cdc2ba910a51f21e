"""DLPack on 'tpu': a real, zero-copy round trip inside PyTorch, a copy on request.

Why not a raw device pointer. A 'tpu' storage's ``data_ptr()`` is an address
reserved for it (csrc/aten/allocator.cpp), not its memory: the memory is a PJRT
buffer that an in-place write replaces (every alias sees the new buffer through
the storage), that DeferAndFuse may not have computed yet, and that on a TPU is
not addressable from the host at all. A consumer that dereferenced a pointer
to it would read a stale buffer (CPU plugin), or fail (TPU). So:

* ``torch.from_dlpack(x)`` / ``torch.utils.dlpack.from_dlpack(to_dlpack(x))``
  for a 'tpu' tensor ``x`` (capsule or ``__dlpack__``, DLPack 0.x or 1.x)
  gives a tensor sharing ``x``'s storage, as CUDA's round trip does: same
  values, writes through either are seen by the other (in every execution
  mode, since both hold the same storage), ``requires_grad`` False. The
  capsule carries the storage's reserved address (device ``kDLExtDev``); the
  importer finds the storage it belongs to among the storages exported by
  this process (held weakly: the capsule keeps them alive until consumed).
* ``x.__dlpack__(dl_device=(kDLCPU, 0))`` (what ``numpy.from_dlpack(x,
  device="cpu")`` asks) exports a host copy, or raises ``BufferError`` with
  ``copy=False``: DLPack allows a producer to copy across devices only when
  asked to.
* Anything else a foreign consumer does with a 'tpu' capsule is that
  consumer's refusal of ``kDLExtDev``; a capsule that points into 'tpu'
  memory this process did not export raises ``BufferError`` at import, never
  yielding a tensor that cannot be read.
"""
from __future__ import annotations

import functools
import threading

import torch
from torch.utils.dlpack import DLDeviceType

_lock = threading.Lock()
_exported: dict[int, tuple[int, object]] = {}  # storage address -> (nbytes, StorageWeakRef)


def _is_tpu(t) -> bool:
    return isinstance(t, torch.Tensor) and t.device.type == "tpu"


def _register(t: torch.Tensor) -> None:
    from torch.multiprocessing.reductions import StorageWeakRef
    s = t.untyped_storage()
    with _lock:
        for addr in [a for a, (_, ref) in _exported.items() if ref.expired()]:
            del _exported[addr]
        _exported[s.data_ptr()] = (s.nbytes(), StorageWeakRef(s))


def _lookup(address: int):
    with _lock:
        for base, (nbytes, ref) in _exported.items():
            if base <= address < base + max(nbytes, 1):
                storage = torch.UntypedStorage._new_with_weak_ptr(ref.cdata)
                if storage is not None:
                    return base, storage
    return None, None


def _alias(storage, offset_bytes: int, like: torch.Tensor) -> torch.Tensor:
    itemsize = like.element_size()
    out = torch.empty(0, dtype=like.dtype, device=storage.device)
    return out.set_(storage, offset_bytes // itemsize, like.size(), like.stride())


def _resolve(imported: torch.Tensor) -> torch.Tensor:
    """The 'tpu' tensor torch built around a capsule's address -> one on the exported storage."""
    address = imported.untyped_storage().data_ptr()
    base, storage = _lookup(address)
    if storage is None:
        raise BufferError(
            "torch_tpu: this DLPack capsule points into 'tpu' memory that was not exported by torch_tpu in this "
            "process (a 'tpu' address is not device memory; PJRT holds the buffer). Export the tensor with "
            "torch.utils.dlpack.to_dlpack / tensor.__dlpack__ in this process, or exchange tensor.cpu().")
    return _alias(storage, address - base + imported.storage_offset() * imported.element_size(), imported)


def _wrap_dlpack_device(original):
    @functools.wraps(original)
    def __dlpack_device__(self):
        if _is_tpu(self):
            return (DLDeviceType.kDLExtDev, self.device.index or 0)
        return original(self)
    __dlpack_device__._torch_tpu = True
    return __dlpack_device__


def _wrap_dlpack(original):
    @functools.wraps(original)
    def __dlpack__(self, *, stream=-1, max_version=None, dl_device=None, copy=None, read_only=False):
        kwargs = dict(stream=stream, max_version=max_version, dl_device=dl_device, copy=copy, read_only=read_only)
        if not _is_tpu(self):
            return original(self, **kwargs)
        if dl_device is not None and int(dl_device[0]) != int(DLDeviceType.kDLExtDev):
            if int(dl_device[0]) != int(DLDeviceType.kDLCPU):
                raise BufferError(f"torch_tpu: a 'tpu' tensor can be exported to DLPack on its own device or as a "
                                  f"host copy (dl_device=(kDLCPU, 0)); {tuple(dl_device)} was asked for")
            if copy is False:
                raise BufferError("torch_tpu: exporting a 'tpu' tensor to the host (dl_device=(kDLCPU, 0)) "
                                  "needs a copy; pass copy=True (or None), or export tensor.cpu()")
            if self.requires_grad:
                original(self, **kwargs)  # torch's own refusal, with torch's words
            host = self.cpu()
            return original(host, stream=None, max_version=max_version, read_only=read_only)
        kwargs["dl_device"] = None
        out = original(self, **kwargs)
        _register(self)
        return out
    __dlpack__._torch_tpu = True
    return __dlpack__


def _wrap_to_dlpack(original):
    @functools.wraps(original)
    def to_dlpack(tensor, *args, **kwargs):
        out = original(tensor, *args, **kwargs)
        if _is_tpu(tensor):
            _register(tensor)
        return out
    to_dlpack._torch_tpu = True
    return to_dlpack


def _wrap_from_dlpack(original):
    @functools.wraps(original)
    def from_dlpack(ext_tensor, *, device=None, copy=None):
        if _is_tpu(ext_tensor):
            # torch's path would export and import it; the result is this alias.
            if ext_tensor.requires_grad:
                ext_tensor.__dlpack__()  # torch's BufferError for tensors that require grad
            out = _alias(ext_tensor.untyped_storage(), ext_tensor.storage_offset() * ext_tensor.element_size(),
                         ext_tensor)
            target = torch.device(device) if device is not None else out.device
            if target != out.device:
                if copy is False:
                    raise ValueError(f"cannot move DLPack tensor from device {out.device} to {target} without "
                                     f"copying. Set copy=None or copy=True.")
                return out.to(target)
            return out.clone() if copy else out
        if device is None and copy is None:
            out = original(ext_tensor)
        else:
            out = original(ext_tensor, device=device, copy=copy)
        return _resolve(out) if _is_tpu(out) else out
    from_dlpack._torch_tpu = True
    return from_dlpack


def install():
    import torch.utils.dlpack as dl
    T = torch.Tensor
    if not getattr(T.__dlpack_device__, "_torch_tpu", False):
        T.__dlpack_device__ = _wrap_dlpack_device(T.__dlpack_device__)
    if not getattr(T.__dlpack__, "_torch_tpu", False):
        T.__dlpack__ = _wrap_dlpack(T.__dlpack__)
    for mod in (dl, torch):
        if not getattr(mod.to_dlpack, "_torch_tpu", False):
            mod.to_dlpack = _wrap_to_dlpack(mod.to_dlpack)
        if not getattr(mod.from_dlpack, "_torch_tpu", False):
            mod.from_dlpack = _wrap_from_dlpack(mod.from_dlpack)
