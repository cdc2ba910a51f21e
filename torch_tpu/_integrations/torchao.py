"""torchao's float8 and NVFP4 inference (`quantize_(model, Float8DynamicActivationFloat8WeightConfig())`,
`NVFP4DynamicActivationNVFP4WeightConfig()`) on 'tpu'.

torchao asserts CUDA sm89+ / MI300 / XPU before it quantizes a weight to
float8 for dynamic per-tensor or per-row scaling, whatever device the weight
is on. Those two granularities run through `torch._scaled_mm`, which 'tpu'
lowers (csrc/ops/linalg.cc), so for a weight on 'tpu' the hardware check is
skipped; weights on other devices, and the other granularities (1x128 /
128x128 blocks), keep torchao's check.

NVFP4's dynamic mode asserts sm100+ (Blackwell); its matmul is
`torch._scaled_mm` with float4 operands and e4m3 block scales, which 'tpu'
lowers too, so the assertion is lifted while a Linear on 'tpu' is converted.
"""
from __future__ import annotations

import threading

import torch

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


def patch_mx_inference(workflow) -> None:
    check = getattr(workflow, "is_sm_at_least_100", None)
    if check is None or getattr(check, "_torch_tpu", False):
        return
    from torchao.quantization.transform_module import _QUANTIZE_CONFIG_HANDLER
    config = workflow.NVFP4DynamicActivationNVFP4WeightConfig
    transform = _QUANTIZE_CONFIG_HANDLER.get(config)
    if transform is None:
        return

    def is_sm_at_least_100():
        return bool(getattr(_state, "tpu_module", False)) or check()

    def tpu_aware_transform(module, cfg, *args, **kwargs):
        weight = getattr(module, "weight", None)
        _state.tpu_module = isinstance(weight, torch.Tensor) and weight.device.type == "tpu"
        try:
            return transform(module, cfg, *args, **kwargs)
        finally:
            _state.tpu_module = False

    is_sm_at_least_100._torch_tpu = True
    workflow.is_sm_at_least_100 = is_sm_at_least_100
    _QUANTIZE_CONFIG_HANDLER[config] = tpu_aware_transform
