"""FlexAttention on 'tpu'.

torch.nn.attention.flex_attention checks the query's device against a fixed
set (cuda, cpu, xpu, hpu, mps) and raises ValueError for any other, although
its dense implementation (the flex_attention higher-order op's math form and
its backward) is made of ordinary ATen ops that run on any device. For 'tpu'
this shim skips that one check; every other check (shapes, block mask, the
devices of q/k/v and the mask) stays. Eager and torch.compile (which sends
the graph to our backend, create_block_mask included) both run the dense
form, forward and backward; tests/test_attention.py compares them with CPU's
scaled_dot_product_attention.
"""
from __future__ import annotations


def patch(module) -> None:
    original = getattr(module, "_validate_device", None)
    if original is None or getattr(original, "_torch_tpu", False):
        return

    def _validate_device(query, key, value):
        if query.device.type == "tpu":
            return
        return original(query, key, value)

    _validate_device._torch_tpu = True
    module._validate_device = _validate_device
