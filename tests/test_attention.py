"""Fused scaled_dot_product_attention on 'tpu' (issue #16 item: the SDPA hooks).

F.scaled_dot_product_attention asks the device which backend to run; on
'tpu' the answer is OVERRIDEABLE (one lowering per call, forward and
backward) where that lowering serves the call, else MATH. Every result and
gradient is compared with CPU, in every eager mode, and under torch.compile.
"""
import pytest
import torch
import torch.nn.functional as F
from torch.nn.attention import SDPBackend, sdpa_kernel

from _helpers import check, each_eager_mode, make_tensor, tpu_only  # noqa: F401

pytestmark = tpu_only
TOL = dict(atol=2e-5, rtol=1e-4)


def qkv(b=2, hq=4, hk=4, lq=5, lk=7, e=8, ev=None, dtype=torch.float32, grad=True):
    ts = [make_tensor((b, hq, lq, e), dtype, seed=1), make_tensor((b, hk, lk, e), dtype, seed=2),
          make_tensor((b, hk, lk, ev or e), dtype, seed=3)]
    return [t.requires_grad_(grad) for t in ts]


def choice(*args, **kwargs):
    return torch.ops.aten._fused_sdp_choice(*args, **kwargs)


def test_choice_is_overrideable_where_the_lowering_serves():
    q, k, v = (t.detach().to("tpu") for t in qkv())
    assert choice(q, k, v) == SDPBackend.OVERRIDEABLE.value
    assert choice(q, k, v, is_causal=True, scale=0.3) == SDPBackend.OVERRIDEABLE.value
    # dropout, mismatched heads without enable_gqa, and 2-D inputs go to math
    assert choice(q, k, v, dropout_p=0.5) == SDPBackend.MATH.value
    k2, v2 = k[:, :2], v[:, :2]
    assert choice(q, k2, v2) == SDPBackend.MATH.value
    assert choice(q, k2, v2, enable_gqa=True) == SDPBackend.OVERRIDEABLE.value
    assert choice(q[0, 0], k[0, 0], v[0, 0]) == SDPBackend.MATH.value
    with sdpa_kernel(SDPBackend.MATH):  # the user's choice of backends is honoured
        assert choice(q, k, v) == SDPBackend.MATH.value


def test_forward_calls_one_fused_op():
    q, k, v = (t.detach().to("tpu") for t in qkv())
    with torch.profiler.profile() as prof:
        F.scaled_dot_product_attention(q, k, v)
    names = {e.name for e in prof.events()}
    assert "aten::_scaled_dot_product_fused_attention_overrideable" in names
    assert "aten::bmm" not in names and "aten::_softmax" not in names


@pytest.mark.parametrize("causal", [False, True])
@pytest.mark.parametrize("shape", [dict(lq=5, lk=7), dict(lq=6, lk=6), dict(lq=1, lk=9), dict(ev=5)],
                         ids=["lq<lk", "square", "decode", "ev"])
def test_matches_cpu_with_gradients(causal, shape):
    check(lambda q, k, v: F.scaled_dot_product_attention(q, k, v, is_causal=causal), *qkv(**shape), **TOL)


def test_scale_and_3d_inputs():
    q, k, v = (t[0] for t in qkv(grad=False))
    q, k, v = (t.detach().requires_grad_() for t in (q, k, v))
    check(lambda q, k, v: F.scaled_dot_product_attention(q, k, v, scale=0.7), q, k, v, **TOL)


@pytest.mark.parametrize("kind", ["float", "bool", "broadcast_float", "bool_with_masked_rows"])
def test_masks_match_cpu_with_gradients(kind):
    q, k, v = qkv()
    g = torch.Generator().manual_seed(5)
    if kind == "float":
        m = make_tensor((2, 4, 5, 7), seed=9).requires_grad_()
    elif kind == "broadcast_float":
        m = make_tensor((5, 7), seed=9).requires_grad_()
    elif kind == "bool":
        m = torch.rand(2, 1, 5, 7, generator=g) > 0.3
        m[..., 0] = True
    else:  # a query row that sees no key: math (and so we) give 0 there, not NaN
        m = torch.rand(2, 1, 5, 7, generator=g) > 0.3
        m[:, :, 2] = False
    check(lambda q, k, v, m: F.scaled_dot_product_attention(q, k, v, attn_mask=m), q, k, v, m, **TOL)


def test_fully_masked_rows_give_zero_and_finite_gradients():
    q, k, v = (t.detach().to("tpu").requires_grad_() for t in qkv())
    m = torch.ones(5, 7, dtype=torch.bool, device="tpu")
    m[1] = False
    out = F.scaled_dot_product_attention(q, k, v, attn_mask=m)
    out.sum().backward()
    assert out[:, :, 1].abs().max().item() == 0
    assert all(torch.isfinite(t.grad).all().item() for t in (q, k, v))


@pytest.mark.parametrize("mask", [False, True])
def test_grouped_query_attention_matches_cpu(mask):
    q, k, v = qkv(hq=6, hk=2)
    if mask:
        m = torch.rand(5, 7, generator=torch.Generator().manual_seed(3)) > 0.2
        m[:, 0] = True
        check(lambda q, k, v, m: F.scaled_dot_product_attention(q, k, v, attn_mask=m, enable_gqa=True),
              q, k, v, m, **TOL)
    else:
        check(lambda q, k, v: F.scaled_dot_product_attention(q, k, v, is_causal=True, enable_gqa=True),
              q, k, v, **TOL)


@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float16, torch.float64])
def test_other_dtypes_match_cpu(dtype):
    tol = dict(atol=1e-2, rtol=1e-2) if dtype != torch.float64 else dict(atol=1e-10, rtol=1e-10)
    check(lambda q, k, v: F.scaled_dot_product_attention(q, k, v, is_causal=True), *qkv(dtype=dtype), **tol)


def test_dropout_still_runs_through_math():
    q, k, v = (t.detach().to("tpu") for t in qkv())
    torch.manual_seed(0)
    out = F.scaled_dot_product_attention(q, k, v, dropout_p=1.0)
    assert out.abs().max().item() == 0  # every probability dropped


def test_fused_op_called_directly_returns_its_schema():
    q, k, v = (t.detach() for t in qkv())
    r = torch.ops.aten._scaled_dot_product_fused_attention_overrideable(q.to("tpu"), k.to("tpu"), v.to("tpu"))
    assert len(r) == 9 and r[4] == 5 and r[5] == 7  # max_q, max_k as the meta function gives them
    ref = F.scaled_dot_product_attention(q, k, v)
    torch.testing.assert_close(r[0].cpu(), ref, **TOL)
    lse = torch.logsumexp((q @ k.transpose(-1, -2)) / 8 ** 0.5, -1)
    torch.testing.assert_close(r[1].cpu(), lse, **TOL)
    with pytest.raises(NotImplementedError, match="dropout"):
        torch.ops.aten._scaled_dot_product_fused_attention_overrideable(q.to("tpu"), k.to("tpu"), v.to("tpu"), None,
                                                                          0.5)


def test_compiled_forward_and_backward_match_cpu():
    def f(q, k, v, m):
        return F.scaled_dot_product_attention(q, k, v, attn_mask=m).sum(-1)
    torch._dynamo.reset()
    cf = torch.compile(f, backend="tpu")
    m = torch.rand(5, 7, generator=torch.Generator().manual_seed(1)) > 0.2
    m[:, 0] = True
    cpu = qkv()
    dev = [t.detach().to("tpu").requires_grad_() for t in cpu]
    ref, out = f(*cpu, m), cf(*dev, m.to("tpu"))
    torch.testing.assert_close(out.cpu(), ref.detach(), **TOL)
    cot = make_tensor(ref.shape, seed=4)
    ref.backward(cot)
    out.backward(cot.to("tpu"))
    for a, b in zip(dev, cpu):
        torch.testing.assert_close(a.grad.cpu(), b.grad, **TOL)


def test_choice_leaves_a_mask_with_is_causal_and_unbroadcastable_masks_to_math():
    q, k, v = (t.detach().to("tpu") for t in qkv())
    m = torch.ones(5, 7, dtype=torch.bool, device="tpu")
    assert choice(q, k, v, m, is_causal=True) == SDPBackend.MATH.value  # PyTorch's contract: an error
    assert choice(q, k, v, torch.ones(5, 3, dtype=torch.bool, device="tpu")) == SDPBackend.MATH.value
    assert choice(q, k, v, torch.ones(2, 1, 1, 7, dtype=torch.bool, device="tpu")) == SDPBackend.OVERRIDEABLE.value


def test_unbroadcastable_mask_raises_as_on_cpu():
    from _helpers import assert_same_error
    q, k, v = (t.detach() for t in qkv())
    assert_same_error(lambda q, k, v, m: F.scaled_dot_product_attention(q, k, v, attn_mask=m),
                      q, k, v, torch.ones(5, 3, dtype=torch.bool))


def test_bias_gradient_only_when_asked():
    q, k, v = (t.detach().to("tpu") for t in qkv(grad=False))
    bias = make_tensor((2, 4, 5, 7), seed=9).to("tpu")
    r = torch.ops.aten._scaled_dot_product_fused_attention_overrideable(q, k, v, bias)
    g = make_tensor((2, 4, 5, 8), seed=11).to("tpu")
    args = (g, q, k, v, bias)
    rest = (r[0], r[1], r[2], r[3], r[4], r[5], 0.0, False, r[6], r[7])
    want = torch.ops.aten._scaled_dot_product_fused_attention_overrideable_backward(*args, [True] * 4, *rest)
    skip = torch.ops.aten._scaled_dot_product_fused_attention_overrideable_backward(*args, [True] * 3 + [False],
                                                                                     *rest)
    for a, b in zip(want[:3], skip[:3]):
        torch.testing.assert_close(a.cpu(), b.cpu())
    # with the mask set, the bias gradient is the scores' gradient: check it against autograd on CPU
    qc, kc, vc = (t.cpu().requires_grad_() for t in (q, k, v))
    bc = bias.cpu().requires_grad_()
    F.scaled_dot_product_attention(qc, kc, vc, attn_mask=bc).backward(g.cpu())
    torch.testing.assert_close(want[3].cpu(), bc.grad, **TOL)


class _Attend(torch.nn.Module):
    """Attention whose keys and values hold NaN in any padding (0 / 0 on a padded row)."""

    def __init__(self, gqa=False):
        super().__init__()
        self.gqa = gqa

    def forward(self, q, k, v, m=None):
        k = k / k.abs().sum(-1, keepdim=True)
        v = v / v.abs().sum(-1, keepdim=True)
        return F.scaled_dot_product_attention(q, k, v, attn_mask=m, enable_gqa=self.gqa)


@pytest.mark.parametrize("case", ["keys", "decode", "gqa_mask", "causal"])
def test_bucketed_lengths_match_cpu(case):
    from torch_tpu._compile import backend as tpu_compile
    torch._dynamo.reset()
    tpu_compile.reset_stats()
    f = torch.compile(_Attend(gqa=case == "gqa_mask"), backend="tpu")

    def causal(q, k, v):
        return F.scaled_dot_product_attention(q, k / k.abs().sum(-1, keepdim=True),
                                              v / v.abs().sum(-1, keepdim=True), is_causal=True)
    compiled_causal = torch.compile(causal, backend="tpu")

    def on_tpu(ts):  # only the lengths vary (dynamic=True would pad the head dimension too)
        out = [t.to("tpu") for t in ts]
        for i, t in enumerate(out):
            for d in ([2] if i < 3 else [0, 1]):
                if t.shape[d] > 1:
                    torch._dynamo.mark_dynamic(t, d)
        return out
    for n in (5, 7, 11, 6):
        lq = 1 if case == "decode" else n
        hk = 2 if case == "gqa_mask" else 4
        q = make_tensor((2, 4, lq, 8), seed=n)
        k, v = make_tensor((2, hk, n, 8), seed=n + 1), make_tensor((2, hk, n, 8), seed=n + 2)
        args = [q, k, v]
        if case == "gqa_mask":
            m = torch.rand(lq, n, generator=torch.Generator().manual_seed(n)) > 0.3
            m[:, 0] = True
            args.append(m)
        if case == "causal":
            ref = causal(*args)
            out = compiled_causal(*on_tpu(args))
        else:
            ref = _Attend(gqa=case == "gqa_mask")(*args)
            out = f(*on_tpu(args))
        assert torch.isfinite(out.cpu()).all()
        torch.testing.assert_close(out.cpu(), ref, **TOL)
    assert tpu_compile.stats()["bucketed_graphs"] >= 1, tpu_compile.bucket_refusals()


# FlexAttention (TorchTitan's attention): torch refuses devices outside a fixed
# set; torch_tpu/_integrations/flex_attention.py lets 'tpu' run its dense
# form. CPU refuses flex backward, so the oracle is CPU's SDPA with the same
# mask (causal; causal + sliding window as a boolean mask), and CPU's flex
# forward for a score_mod.
def _causal(b, h, q, k):
    return q >= k


def _window(b, h, q, k):
    return (q >= k) & (q - k < 3)


@pytest.mark.parametrize("compiled", [False, True], ids=["eager", "compiled"])
@pytest.mark.parametrize("mask_mod", [_causal, _window], ids=["causal", "window"])
def test_flex_attention_forward_and_backward_match_cpu_sdpa(mask_mod, compiled):
    from torch.nn.attention.flex_attention import create_block_mask, flex_attention
    q, k, v = qkv(lq=16, lk=16)
    L = 16
    dense = mask_mod(0, 0, torch.arange(L)[:, None], torch.arange(L)[None, :])
    ref = F.scaled_dot_product_attention(q, k, v, attn_mask=dense)
    ref.square().sum().backward()
    qt, kt, vt = (t.detach().to("tpu").requires_grad_() for t in (q, k, v))
    make_mask = torch.compile(create_block_mask) if compiled else create_block_mask  # no tensor inputs: still ours
    attend = torch.compile(flex_attention) if compiled else flex_attention  # default backend: sent to ours
    bm = make_mask(mask_mod, 2, 4, L, L, device="tpu")
    assert bm.kv_num_blocks.device.type == "tpu"
    out = attend(qt, kt, vt, block_mask=bm)
    out.square().sum().backward()
    torch.testing.assert_close(out.cpu(), ref, **TOL)
    for got, want in ((qt, q), (kt, k), (vt, v)):
        torch.testing.assert_close(got.grad.cpu(), want.grad, **TOL)


def test_flex_attention_score_mod_matches_cpu_flex():
    from torch.nn.attention.flex_attention import flex_attention

    def bias(score, b, h, q, k):
        return score + (q - k).float() * 0.1 * (h + 1)

    q, k, v = qkv(lq=8, lk=8, grad=False)
    want = flex_attention(q, k, v, score_mod=bias)
    got = flex_attention(*(t.to("tpu") for t in (q, k, v)), score_mod=bias)
    torch.testing.assert_close(got.cpu(), want, **TOL)


def test_flex_attention_keeps_torchs_other_checks():
    from torch.nn.attention.flex_attention import flex_attention
    q, k, v = (t.detach().to("tpu") for t in qkv(hk=3))
    with pytest.raises(ValueError, match="same number of heads"):
        flex_attention(q, k, v)
