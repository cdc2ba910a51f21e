"""Sending 'tpu' tensors between processes (torch.multiprocessing).

CUDA shares device memory through IPC handles, so a tensor put on a queue is
the same memory in the consumer. PJRT has no such handle for 'tpu' buffers,
and a silent copy would break programs that rely on sharing (Hogwild
training), so sending a 'tpu' tensor or storage is refused with a clear error
that says what to send instead (``tensor.cpu()``; the consumer moves it to
its own device).

Where the pickling happens in the caller (``Pipe.send``, ``SimpleQueue.put``,
``ForkingPickler.dumps``) the caller gets the exception. ``mp.Queue.put``
pickles in a feeder thread whose errors are only printed, so there the
receiver's ``get()`` raises the same error instead of waiting forever.
"""
from __future__ import annotations

import threading

import torch

_MESSAGE = ("torch_tpu: a 'tpu' {what} cannot be sent to another process: device memory is not shareable "
            "between processes on 'tpu' (torch.cuda's IPC handles have no PJRT equivalent). Send "
            "tensor.cpu() (or tensor.detach().cpu()) and move it to 'tpu' in the receiving process.")


def _refused(message):
    raise RuntimeError(message)


def _guard(original, what):
    def reduce(obj):
        device = obj.device if isinstance(obj, (torch.Tensor, torch.UntypedStorage)) else None
        if device is None or device.type != "tpu":
            return original(obj)
        message = _MESSAGE.format(what=what)
        if threading.current_thread().name == "QueueFeederThread":
            return (_refused, (message,))  # the receiver raises; the feeder would only print
        raise RuntimeError(message)
    return reduce


def install():
    import torch.multiprocessing.reductions as red
    from multiprocessing.reduction import ForkingPickler
    tensor_types = {torch.Tensor, torch.nn.Parameter, *torch._tensor_classes}
    for t in tensor_types:
        original = ForkingPickler._extra_reducers.get(t, red.reduce_tensor)
        if not getattr(original, "_torch_tpu", False):
            f = _guard(original, "tensor")
            f._torch_tpu = True
            ForkingPickler.register(t, f)
    original = ForkingPickler._extra_reducers.get(torch.UntypedStorage, red.reduce_storage)
    if not getattr(original, "_torch_tpu", False):
        f = _guard(original, "storage")
        f._torch_tpu = True
        ForkingPickler.register(torch.UntypedStorage, f)
