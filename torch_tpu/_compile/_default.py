"""`torch.compile(model)` with the default backend on 'tpu' tensors.

torch.compile's default backend is Inductor, which has no code generator for
a PJRT device: for device type 'tpu' it picks its Pallas path and fails with
"No module named 'jax'". A graph whose inputs (or, without tensor inputs, whose
values) live on 'tpu' therefore goes to
our backend ("tpu", the same as torch.compile(backend="tpu")); every other
graph stays with Inductor unchanged. Inductor's mode/options do not apply to
those graphs. TORCH_TPU_INDUCTOR_REDIRECT=0 turns this off.
"""
from __future__ import annotations

import os

import torch


def _on_tpu(model, inputs) -> bool:
    """Any input on 'tpu', or (a graph without tensor inputs, such as
    flex attention's create_block_mask(..., device="tpu")) any value the graph
    makes on 'tpu', from the example values Dynamo records on each node."""
    if any(isinstance(t, torch.Tensor) and t.device.type == "tpu" for t in inputs):
        return True
    graph = getattr(model, "graph", None)
    for node in getattr(graph, "nodes", ()):
        vals = node.meta.get("example_value", node.meta.get("val"))
        for v in vals if isinstance(vals, (list, tuple)) else (vals,):
            if isinstance(v, torch.Tensor) and v.device.type == "tpu":
                return True
    return False


def install() -> None:
    if os.environ.get("TORCH_TPU_INDUCTOR_REDIRECT", "1") == "0":
        return
    wrapper = getattr(torch, "_TorchCompileInductorWrapper", None)
    if wrapper is None or getattr(wrapper.__call__, "_torch_tpu", False):
        return
    inductor_call = wrapper.__call__

    def __call__(self, model_, inputs_, **kwargs):
        if _on_tpu(model_, inputs_):
            from .backend import tpu_backend
            return tpu_backend(model_, inputs_)
        return inductor_call(self, model_, inputs_, **kwargs)

    __call__._torch_tpu = True
    wrapper.__call__ = __call__
