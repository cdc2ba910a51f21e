"""Low precision on 'tpu' (issue #18, first part): torch._scaled_mm with
per-tensor and row-wise scales, bias, float8 results and scale_result, and
float8 tensors through indexing ops, against CPU."""
import pytest
import torch

from _helpers import DEV, tpu_only

pytestmark = tpu_only

F8 = [torch.float8_e4m3fn, torch.float8_e5m2]


def operands(dt, m=16, k=32, n=32, seed=0):  # PyTorch's meta wants dims divisible by 16
    g = torch.Generator().manual_seed(seed)
    a = (torch.randn(m, k, generator=g) * 3).to(dt)
    b = (torch.randn(n, k, generator=g) * 3).to(dt).t()  # column-major, as _scaled_mm wants
    return a, b


@pytest.mark.parametrize("dt", F8, ids=["e4m3fn", "e5m2"])
@pytest.mark.parametrize("out_dtype", [torch.float32, torch.bfloat16, torch.float16], ids=["f32", "bf16", "f16"])
@pytest.mark.parametrize("scales", ["tensor", "rowwise"])
@pytest.mark.parametrize("bias", [False, True])
def test_scaled_mm_matches_cpu(dt, out_dtype, scales, bias):
    if dt == torch.float8_e5m2 and scales == "rowwise":
        pytest.skip("CPU's _scaled_mm takes row-wise scales for e4m3 operands only")
    a, b = operands(dt)
    g = torch.Generator().manual_seed(1)
    if scales == "tensor":
        sa, sb = torch.tensor(0.5), torch.tensor(1.75)
    else:
        sa, sb = torch.rand(16, 1, generator=g) + 0.5, torch.rand(1, 32, generator=g) + 0.5
    kw = {"out_dtype": out_dtype}
    if bias:
        kw["bias"] = torch.randn(32, generator=g).to(out_dtype if out_dtype != torch.float32 else torch.bfloat16)
        if out_dtype == torch.float32:
            pytest.skip("CPU wants the bias in the output dtype")
    try:
        ref = torch._scaled_mm(a, b, sa, sb, **kw)
    except RuntimeError as e:
        pytest.skip(f"CPU refuses this combination: {e}")
    dev_kw = {k: (v.to(DEV) if isinstance(v, torch.Tensor) else v) for k, v in kw.items()}
    got = torch._scaled_mm(a.to(DEV), b.to(DEV), sa.to(DEV), sb.to(DEV), **dev_kw)
    assert got.dtype == ref.dtype and got.shape == ref.shape
    tol = {torch.float32: 1e-4, torch.bfloat16: 1e-2, torch.float16: 2e-3}[out_dtype]
    torch.testing.assert_close(got.cpu().float(), ref.float(), rtol=tol, atol=tol * 8)


def test_scaled_mm_float8_result_with_scale_result():
    a, b = operands(torch.float8_e4m3fn)
    sa, sb, sr = torch.tensor(0.5), torch.tensor(1.5), torch.tensor(4.0)
    ref = torch._scaled_mm(a, b, sa, sb, scale_result=sr, out_dtype=torch.float8_e4m3fn)
    got = torch._scaled_mm(a.to(DEV), b.to(DEV), sa.to(DEV), sb.to(DEV), scale_result=sr.to(DEV),
                           out_dtype=torch.float8_e4m3fn)
    assert got.dtype == torch.float8_e4m3fn
    # one float8 step apart at most (CPU's f32 accumulation order differs)
    torch.testing.assert_close(got.cpu().float(), ref.float(), rtol=0.13, atol=0.02)


def test_scaled_mm_blockwise_scales_raise_clearly():
    a, b = operands(torch.float8_e4m3fn)
    with pytest.raises((RuntimeError, NotImplementedError, ValueError), match="scale"):
        torch._scaled_mm(a.to(DEV), b.to(DEV), torch.ones(16, 2, device=DEV), torch.ones(2, 32, device=DEV),
                         out_dtype=torch.bfloat16)


@pytest.mark.parametrize("dt", F8, ids=["e4m3fn", "e5m2"])
def test_float8_tensors_through_indexing_ops(dt):
    x = (torch.randn(6, 5) * 4).to(dt)
    d = x.to(DEV)
    idx = torch.tensor([4, 0, 2])
    for got, ref in [
        (d.index_select(0, idx.to(DEV)), x.index_select(0, idx)),
        (d[idx.to(DEV)], x[idx]),
        (d[1:4, ::2], x[1:4, ::2]),
        (torch.cat([d, d[:2]]), torch.cat([x, x[:2]])),
        (d.t().contiguous(), x.t().contiguous()),
        (d.view(torch.uint8), x.view(torch.uint8)),
    ]:
        assert got.dtype == ref.dtype
        assert torch.equal(got.cpu().view(torch.uint8), ref.view(torch.uint8))


NEW_F8 = [torch.float8_e4m3fnuz, torch.float8_e5m2fnuz, torch.float8_e8m0fnu]
EXTREMES = [0.0, -0.0, 0.1, 1.5, -2.0, 300.0, 448.0, 57344.0, 1e6, 2.0 ** 127, 3e-5, -1e-9, 1e-40,
            float("nan"), float("inf"), -float("inf")]


def bits(t):
    return t.contiguous().view(torch.uint8)


@pytest.mark.parametrize("dt", NEW_F8, ids=["e4m3fnuz", "e5m2fnuz", "e8m0fnu"])
@pytest.mark.parametrize("src", [torch.float32, torch.bfloat16, torch.float16], ids=["f32", "bf16", "f16"])
def test_float8_variants_convert_bit_exact(dt, src):
    g = torch.Generator().manual_seed(3)
    x = torch.cat([torch.tensor(EXTREMES), torch.randn(400, generator=g) * 50]).to(src)
    ref = x.to(dt)
    got = x.to(DEV).to(dt)
    assert got.dtype == dt
    assert torch.equal(bits(got.cpu()), bits(ref))
    back, ref_back = got.to(src).cpu(), ref.to(src)
    assert torch.equal(back.isnan(), ref_back.isnan())
    assert torch.equal(back.nan_to_num(), ref_back.nan_to_num())


@pytest.mark.parametrize("dt", NEW_F8 + [torch.float4_e2m1fn_x2], ids=["e4m3fnuz", "e5m2fnuz", "e8m0fnu", "fp4x2"])
def test_new_low_precision_dtypes_as_device_storage(dt):
    raw = torch.randint(0, 256, (6, 4), dtype=torch.uint8, generator=torch.Generator().manual_seed(1))
    x = raw.view(dt)
    d = x.to(DEV)
    assert d.dtype == dt and torch.equal(bits(d.cpu()), raw)
    assert torch.equal(bits(d.view(torch.uint8).cpu()), raw)
    assert torch.equal(bits(torch.cat([d, d[1:3]]).cpu()), bits(torch.cat([x, x[1:3]])))
    assert torch.equal(bits(d[::2, 1:].cpu()), bits(x[::2, 1:]))
    assert torch.equal(bits(d.t().contiguous().cpu()), bits(x.t().contiguous()))
    assert torch.equal(bits(torch.zeros(3, dtype=dt, device=DEV).cpu()), bits(torch.zeros(3, dtype=dt)))
    if dt != torch.float4_e2m1fn_x2:  # CPU has no index_select for packed float4
        idx = torch.tensor([5, 0, 3])
        assert torch.equal(bits(d.index_select(0, idx.to(DEV)).cpu()), bits(x.index_select(0, idx)))
