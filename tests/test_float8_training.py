"""torchao's float8 training recipes on 'tpu' (issue #18): convert_to_float8_training swaps
nn.Linear for Float8Linear, whose matmuls are torch._scaled_mm on float8 operands. A small MLP
trains on 'tpu' (eager modes and torch.compile) with the losses of the same run on CPU."""
import pytest
import torch
import torch.nn as nn
from _helpers import tpu_only

pytestmark = tpu_only
float8 = pytest.importorskip("torchao.float8")

try:
    import torch_tpu  # noqa: F401
    from torch_tpu.execution_mode import EagerMode, eager_mode
except ImportError:  # pragma: no cover - CPU stand-in without the backend
    pass


def train(recipe, device, steps=5, compiled=False, dtype=torch.float32, tokens=64):
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(128, 256), nn.GELU(), nn.Linear(256, 128))
    float8.convert_to_float8_training(model, config=float8.Float8LinearConfig.from_recipe_name(recipe))
    assert sum(type(m).__name__ == "Float8Linear" for m in model.modules()) == 2
    model.to(device, dtype=dtype)
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
    run = torch.compile(model, backend="tpu") if compiled else model
    g = torch.Generator().manual_seed(1)
    losses = []
    for _ in range(steps):
        x, y = torch.randn(tokens, 128, generator=g), torch.randn(tokens, 128, generator=g)
        loss = nn.functional.mse_loss(run(x.to(device, dtype)).float(), y.to(device))
        opt.zero_grad()
        loss.backward()
        opt.step()
        losses.append(loss.item())
    return losses, model


@pytest.mark.parametrize("recipe", ["tensorwise", "rowwise", "rowwise_with_gw_hp"])
@pytest.mark.parametrize("mode", ["STRICT", "DEFER_AND_FUSE"])
def test_float8_training_losses_match_cpu(recipe, mode):
    ref, _ = train(recipe, "cpu")
    with eager_mode(getattr(EagerMode, mode)):
        got, model = train(recipe, "tpu")
    # CPU's _scaled_mm applies tensorwise scales a few ulps differently from the
    # f32-product-then-scales order (cuBLAS's, ours), which moves a few float8 roundings
    torch.testing.assert_close(torch.tensor(got), torch.tensor(ref), rtol=1e-3, atol=1e-4)
    assert all(p.device.type == "tpu" for p in model.parameters())


@pytest.mark.parametrize("recipe", ["tensorwise", "rowwise"])
def test_float8_training_compiled(recipe):
    ref, _ = train(recipe, "cpu")
    got, _ = train(recipe, "tpu", compiled=True)
    torch.testing.assert_close(torch.tensor(got), torch.tensor(ref), rtol=1e-3, atol=1e-4)


def test_float8_training_bf16_model():
    ref, _ = train("rowwise", "cpu", dtype=torch.bfloat16)
    got, _ = train("rowwise", "tpu", dtype=torch.bfloat16)
    torch.testing.assert_close(torch.tensor(got), torch.tensor(ref), rtol=2e-3, atol=1e-3)


def test_unaligned_tokens_refused_as_on_cuda_unless_padded():
    # _scaled_mm's operands must have sizes divisible by 16 (CUDA's rule, checked by
    # PyTorch's meta function); torchao's pad_inner_dim pads the inner dimension
    with pytest.raises(RuntimeError, match="divisible by 16"):
        train("tensorwise", "tpu", steps=1, tokens=60)
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(128, 256), nn.GELU(), nn.Linear(256, 128))
    cpu = nn.Sequential(nn.Linear(128, 256), nn.GELU(), nn.Linear(256, 128))
    cpu.load_state_dict(model.state_dict())
    config = float8.Float8LinearConfig(pad_inner_dim=True)
    float8.convert_to_float8_training(model, config=config)
    float8.convert_to_float8_training(cpu, config=config)
    x = torch.randn(60, 128)
    out = model.to("tpu")(x.to("tpu"))
    out.sum().backward()
    ref = cpu(x)
    torch.testing.assert_close(out.cpu(), ref, rtol=2e-2, atol=2e-2)


# Float8 inference (torchao quantize_ with dynamic float8 activations and
# weights): torchao asserts CUDA sm89+ before quantizing; for weights on 'tpu'
# our shim (torch_tpu/_integrations/torchao.py) lets per-tensor and per-row
# through, since torch._scaled_mm serves them. The oracle is the same
# quantize_ on CPU (its hardware check lifted for the reference).
@pytest.mark.parametrize("granularity", ["row", "tensor"])
def test_float8_inference_quantize_matches_cpu(granularity, monkeypatch):
    import copy
    from torchao.quantization import Float8DynamicActivationFloat8WeightConfig, PerRow, PerTensor, quantize_
    import torchao.quantization.quant_api as qa
    g = PerRow() if granularity == "row" else PerTensor()
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(64, 128), nn.ReLU(), nn.Linear(128, 32)).to(torch.bfloat16)
    x = torch.randn(16, 64, dtype=torch.bfloat16)
    dev = copy.deepcopy(model).to("tpu")
    quantize_(dev, Float8DynamicActivationFloat8WeightConfig(granularity=g))  # no hardware check for 'tpu'
    assert dev[0].weight.device.type == "tpu" and "Float8" in type(dev[0].weight).__name__
    got = dev(x.to("tpu")).cpu()
    monkeypatch.setattr(qa, "_check_hardware_support", lambda granularities: None)
    ref = copy.deepcopy(model)
    quantize_(ref, Float8DynamicActivationFloat8WeightConfig(granularity=g))
    torch.testing.assert_close(got, ref(x), atol=1e-2, rtol=1e-2)
    assert (got.float() - model(x).float()).abs().max() < 0.1  # and near the bf16 model


def test_float8_inference_check_kept_for_cpu_weights():
    from torchao.quantization import Float8DynamicActivationFloat8WeightConfig, quantize_
    if torch.cuda.is_available():
        pytest.skip("the check passes on a CUDA machine")
    with pytest.raises(AssertionError, match="compute capability"):
        quantize_(nn.Sequential(nn.Linear(64, 32)).to(torch.bfloat16), Float8DynamicActivationFloat8WeightConfig())
