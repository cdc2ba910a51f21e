"""torchao's float8 inference (`quantize_(model, Float8DynamicActivationFloat8WeightConfig())`)
on 'tpu'.

torchao asserts CUDA sm89+ / MI300 / XPU before it quantizes a weight to
float8 for dynamic per-tensor or per-row scaling, whatever device the weight
is on. Those two granularities run through `torch._scaled_mm`, which 'tpu'
lowers (csrc/ops/linalg.cc), so for a weight on 'tpu' the hardware check is
skipped; weights on other devices, and the other granularities (1x128 /
128x128 blocks), keep torchao's check.
"""
from __future__ import annotations

import threading

_state = threading.local()


def patch(quant_api) -> None:
    check = getattr(quant_api, "_check_hardware_support", None)
    quantize = getattr(quant_api, "_float8_dynamic_activation_float8_weight_quantize_tensor", None)
    if check is None or quantize is None or getattr(check, "_torch_tpu", False):
        return
    from torchao.quantization.granularity import PerRow, PerTensor

    def _check_hardware_support(granularities):
        served = all(isinstance(g, (PerRow, PerTensor)) for g in granularities) and \
            type(granularities[0]) is type(granularities[1])
        if getattr(_state, "tpu_weight", False) and served:
            return None
        return check(granularities)

    def _quantize_tensor(weight, config):
        _state.tpu_weight = getattr(weight, "device", None) is not None and weight.device.type == "tpu"
        try:
            return quantize(weight, config)
        finally:
            _state.tpu_weight = False

    _check_hardware_support._torch_tpu = True
    quant_api._check_hardware_support = _check_hardware_support
    quant_api._float8_dynamic_activation_float8_weight_quantize_tensor = _quantize_tensor
