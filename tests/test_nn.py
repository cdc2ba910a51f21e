"""Transformer building blocks against CPU, forward and backward: layer_norm,
embedding, causal attention, tril/triu, dropout, inf tests, and a small GPT
trained a few steps with AdamW."""
import math
import os
import sys

import pytest
import torch
import torch.nn.functional as F
from _helpers import DEV, ON_TPU, check, check_scenario, make_tensor

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "bench"))
import models  # noqa: E402


def leaf(shape, seed=0, dtype=torch.float32):
    return make_tensor(shape, dtype, seed=seed).requires_grad_()


@pytest.mark.parametrize("affine", [True, False])
@pytest.mark.parametrize("shape,normalized", [((4, 8), (8,)), ((2, 3, 6), (3, 6))])
def test_layer_norm(shape, normalized, affine):
    w = leaf(normalized, seed=1) if affine else None
    b = leaf(normalized, seed=2) if affine else None
    check(lambda x, w, b: F.layer_norm(x, normalized, w, b, eps=1e-5), leaf(shape), w, b)


def test_layer_norm_bfloat16():
    x = make_tensor((4, 16), torch.bfloat16)
    check(lambda x: F.layer_norm(x, (16,)), x, atol=2e-2, rtol=2e-2)


@pytest.mark.parametrize("padding_idx", [None, 2])
def test_embedding_forward_backward(padding_idx):
    weight = leaf((10, 6))
    idx = torch.tensor([[1, 2, 4, 2], [9, 0, 2, 1]])
    check(lambda w, i: F.embedding(i, w, padding_idx=padding_idx), weight, idx)


def test_embedding_scale_grad_by_freq():
    weight = leaf((7, 3))
    idx = torch.tensor([1, 1, 3, 6, 1])
    check(lambda w, i: F.embedding(i, w, scale_grad_by_freq=True), weight, idx)


@pytest.mark.parametrize("mode", ["sum", "mean", "max"])
@pytest.mark.parametrize("padding_idx", [None, 3])
def test_embedding_bag_forward_backward(mode, padding_idx):
    # the backward lowering reads _embedding_bag_dense_backward's arguments by name
    weight = leaf((8, 5))
    idx = torch.tensor([1, 3, 3, 7, 0, 2, 5, 3, 6])
    offsets = torch.tensor([0, 2, 2, 6])  # an empty bag too
    check(lambda w, i, o: F.embedding_bag(i, w, o, mode=mode, padding_idx=padding_idx), weight, idx, offsets)


@pytest.mark.parametrize("scale_grad_by_freq", [False, True])
def test_embedding_bag_per_sample_weights(scale_grad_by_freq):
    weight, psw = leaf((8, 5)), leaf((9,), seed=3)
    idx = torch.tensor([1, 3, 3, 7, 0, 2, 5, 3, 6])
    offsets = torch.tensor([0, 4, 6])
    check(lambda w, i, o, p: F.embedding_bag(i, w, o, mode="sum", per_sample_weights=p, padding_idx=3,
                                             scale_grad_by_freq=scale_grad_by_freq), weight, idx, offsets, psw)


@pytest.mark.parametrize("affine", [True, False])
def test_group_norm_forward_backward(affine):
    w = leaf((6,), seed=1) if affine else None
    b = leaf((6,), seed=2) if affine else None
    check(lambda x, w, b: F.group_norm(x, 3, w, b, eps=1e-5), leaf((2, 6, 4, 3)), w, b)


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
def test_group_norm_channels_last_and_3d(dtype):
    # Diffusers' UNets feed group norm channels-last activations: PyTorch's composite
    # form views its input and failed on them before group norm had a lowering.
    w, b = leaf((8,), seed=1, dtype=dtype), leaf((8,), seed=2, dtype=dtype)
    tol = {} if dtype == torch.float32 else dict(atol=2e-2, rtol=2e-2)
    x = make_tensor((2, 5, 3, 8), dtype, seed=3).permute(0, 3, 1, 2).detach().requires_grad_()
    check(lambda x, w, b: F.group_norm(x, 4, w, b), x, w, b, **tol)
    check(lambda x: torch.native_group_norm(x, None, None, 2, 8, 7, 2, 1e-3), leaf((2, 8, 7), dtype=dtype), **tol)


@pytest.mark.parametrize("training", [True, False])
def test_batch_norm_forward_backward(training):
    rm, rv = make_tensor((4,), torch.float32, seed=5), make_tensor((4,), torch.float32, seed=6).abs() + 0.5
    check(lambda x, w, b, rm, rv: (F.batch_norm(x, rm, rv, w, b, training=training, momentum=0.3), rm, rv),
          leaf((3, 4, 5)), leaf((4,), seed=1), leaf((4,), seed=2), rm, rv)


@pytest.mark.parametrize("fn", [torch.tril, torch.triu])
@pytest.mark.parametrize("k", [-1, 0, 2])
def test_tril_triu(fn, k):
    check(lambda x: fn(x, k), leaf((2, 4, 5)))


@pytest.mark.parametrize("is_causal", [True, False])
def test_scaled_dot_product_attention(is_causal):
    q, k, v = leaf((2, 3, 5, 8), 1), leaf((2, 3, 5, 8), 2), leaf((2, 3, 5, 8), 3)
    check(lambda q, k, v: F.scaled_dot_product_attention(q, k, v, is_causal=is_causal), q, k, v)


def test_scaled_dot_product_attention_bool_mask():
    q, k, v = leaf((1, 2, 4, 8), 1), leaf((1, 2, 4, 8), 2), leaf((1, 2, 4, 8), 3)
    mask = torch.tensor([[True, False, True, True]] * 4)
    check(lambda q, k, v, m: F.scaled_dot_product_attention(q, k, v, attn_mask=m), q, k, v, mask)


@pytest.mark.parametrize("name", ["isinf", "isposinf", "isneginf", "isfinite", "isnan"])
def test_inf_tests(name):
    x = torch.tensor([1.0, math.inf, -math.inf, math.nan, 0.0])
    check(getattr(torch, name), x)


def test_dropout_statistics_and_gradient():
    if not ON_TPU:
        pytest.skip("device RNG stream")
    torch.manual_seed(3)
    x = torch.ones(20000, device=DEV, requires_grad=True)
    y = F.dropout(x, p=0.25, training=True)
    kept = (y != 0).float().mean().item()
    assert abs(kept - 0.75) < 0.02
    vals = torch.unique(y.detach().cpu())
    torch.testing.assert_close(vals, torch.tensor([0.0, 1 / 0.75]))
    y.sum().backward()
    torch.testing.assert_close(x.grad.cpu(), y.detach().cpu())
    torch.manual_seed(3)
    y2 = F.dropout(torch.ones(20000, device=DEV), p=0.25, training=True)
    torch.testing.assert_close(y2.cpu(), y.detach().cpu())
    assert torch.equal(F.dropout(x, p=0.25, training=False).detach().cpu(), x.detach().cpu())


def test_small_gpt_trains_like_cpu():
    def scenario(device):
        torch.manual_seed(0)
        step, _ = models.gpt_step(device, batch=2, seq=8)
        return [step().item() for _ in range(3)]
    check_scenario(scenario, atol=1e-4, rtol=1e-4)


@pytest.mark.parametrize("compiled", [False, True], ids=["eager", "compiled"])
def test_kv_cache_generation_matches_full_recompute(compiled):
    """bench/models.py's static-KV-cache decoder (the generation workload of
    bench/peers.py): its greedy tokens on 'tpu', eager or under
    torch.compile(backend="tpu"), equal CPU's and equal greedy decoding that
    recomputes the whole prefix with TinyGPT each token."""
    if compiled and not ON_TPU:
        pytest.skip("torch.compile(backend='tpu') needs 'tpu'")
    wrap = (lambda m: torch.compile(m, backend="tpu")) if compiled else (lambda m: m)
    gen_cpu, parts = models.gpt_kv_generate("cpu", new_tokens=6, prompt_len=5)
    tokens = gen_cpu()
    gen_dev, _ = models.gpt_kv_generate(DEV, wrap=wrap, new_tokens=6, prompt_len=5)
    assert torch.equal(gen_dev().cpu(), tokens)
    gpt = parts["decoder"].gpt
    idx = parts["prompt"]
    with torch.no_grad():
        for _ in range(6):
            idx = torch.cat([idx, gpt(idx)[:, -1].argmax(-1, keepdim=True)], dim=1)
    assert torch.equal(idx[:, 5:], tokens)


@pytest.mark.parametrize("activation", ["relu", "gelu"])
@pytest.mark.parametrize("norm_first", [False, True])
@pytest.mark.parametrize("masks", ["none", "src_mask", "padding", "both"])
def test_transformer_encoder_inference_fast_path(activation, norm_first, masks):
    """eval() + no_grad() sends nn.TransformerEncoderLayer to
    aten::_transformer_encoder_layer_fwd (it failed as an unimplemented op);
    the same values as CPU's fast path, every mask arrangement."""
    torch.manual_seed(0)
    layer = torch.nn.TransformerEncoderLayer(16, 2, 32, dropout=0.0, batch_first=True, activation=activation,
                                             norm_first=norm_first)
    enc = torch.nn.TransformerEncoder(layer, 2, enable_nested_tensor=False).eval()
    x = make_tensor((2, 5, 16), seed=3)
    kw = {}
    if masks in ("src_mask", "both"):
        kw["mask"] = torch.nn.Transformer.generate_square_subsequent_mask(5)
    if masks in ("padding", "both"):
        kw["src_key_padding_mask"] = torch.tensor([[False] * 5, [False, False, False, True, True]])
    with torch.no_grad():
        ref = enc(x, **kw)
        got = enc.to(DEV)(x.to(DEV), **{k: v.to(DEV) for k, v in kw.items()})
    torch.testing.assert_close(got.cpu(), ref, atol=2e-5, rtol=1e-5)
