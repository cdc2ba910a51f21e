"""Module conversion to and from 'tpu' keeps Parameter identity, as on CUDA.

torch 2.14.1 does not count PrivateUse1 as a dense backend when it decides
whether `param.data = converted` may be used (pytorch#196975), so without our
workaround `model.to('tpu')` builds new Parameters: tied weights untie and an
optimizer built before `.to()` updates stale tensors. The oracle for every
identity relation is the same conversion on CPU (where torch keeps identity).
"""

import copy

import pytest
import torch
import torch.nn as nn
import torch.nn.functional as F

from _helpers import assert_same, tpu_only

pytestmark = tpu_only


class TiedLM(nn.Module):
    """A tiny language model whose output head shares the embedding matrix."""

    def __init__(self, vocab=37, width=16):
        super().__init__()
        self.embed_tokens = nn.Embedding(vocab, width)
        self.mlp = nn.Sequential(nn.Linear(width, 2 * width), nn.Tanh(), nn.Linear(2 * width, width))
        self.lm_head = nn.Linear(width, vocab, bias=False)
        self.lm_head.weight = self.embed_tokens.weight

    def forward(self, idx):
        return self.lm_head(self.mlp(self.embed_tokens(idx)))


def make_model():
    torch.manual_seed(0)
    return TiedLM()


def batch(step):
    g = torch.Generator().manual_seed(step)
    return torch.randint(0, 37, (4, 9), generator=g)


def train(model, opt, device, steps=3):
    losses = []
    for s in range(steps):
        idx = batch(s).to(device)
        loss = F.cross_entropy(model(idx[:, :-1]).reshape(-1, 37), idx[:, 1:].reshape(-1))
        opt.zero_grad()
        loss.backward()
        opt.step()
        losses.append(loss.item())
    return losses


def test_tied_parameters_stay_tied_through_to_and_back():
    m = make_model()
    w = m.embed_tokens.weight
    params = list(m.parameters())
    m.to("tpu")
    assert m.embed_tokens.weight is w and m.lm_head.weight is w
    assert w.device.type == "tpu" and isinstance(w, nn.Parameter)
    assert [p is q for p, q in zip(m.parameters(), params)] == [True] * len(params)
    m.cpu()
    assert m.lm_head.weight is m.embed_tokens.weight is w
    assert w.device.type == "cpu"


def test_optimizer_built_before_to_updates_device_parameters():
    ref = make_model()
    ref_losses = train(ref, torch.optim.AdamW(ref.parameters(), lr=1e-2), "cpu")

    m = make_model()
    opt = torch.optim.AdamW(m.parameters(), lr=1e-2)  # before .to(), as many scripts do
    m.to("tpu")
    losses = train(m, opt, "tpu")
    assert losses == pytest.approx(ref_losses, rel=1e-4, abs=1e-5)
    for (name, p), (_, q) in zip(m.named_parameters(), ref.named_parameters()):
        assert p.device.type == "tpu", name
        assert_same(p.detach(), q.detach(), atol=1e-4, rtol=1e-4)
    # The optimizer's state lives with the parameters it was given.
    assert all(s["exp_avg"].device.type == "tpu" for s in opt.state.values())


def test_tied_gradient_is_the_sum_of_both_uses():
    ref = make_model()
    m = make_model().to("tpu")
    idx = batch(0)
    for model, d in ((ref, "cpu"), (m, "tpu")):
        model(idx.to(d)).square().mean().backward()
    assert m.lm_head.weight.grad is m.embed_tokens.weight.grad
    assert_same(m.embed_tokens.weight.grad, ref.embed_tokens.weight.grad, atol=1e-5, rtol=1e-4)


def test_gradients_move_with_their_parameters():
    m = make_model()
    m(batch(0)).sum().backward()
    w, g = m.embed_tokens.weight, m.embed_tokens.weight.grad
    expected = g.clone()
    m.to("tpu")
    assert m.embed_tokens.weight is w and w.grad is g and g.device.type == "tpu"
    assert_same(g, expected)


def test_data_assignment_across_devices():
    cpu = torch.randn(3, 4, requires_grad=True)
    version = cpu._version
    dev = torch.arange(12.0, device="tpu").view(3, 4)
    cpu.data = dev
    assert cpu.device.type == "tpu" and cpu.requires_grad
    assert_same(cpu.detach(), torch.arange(12.0).view(3, 4))
    assert cpu._version == version
    (cpu * 2).sum().backward()
    assert cpu.grad.device.type == "tpu"
    assert_same(cpu.grad, torch.full((3, 4), 2.0))
    cpu.data = torch.ones(2)  # and back to the host
    assert cpu.device.type == "cpu" and cpu.tolist() == [1.0, 1.0]


def test_incompatible_data_assignment_still_refused():
    # Layouts differ: torch refuses on CPU and CUDA, so must we.
    t = torch.zeros(2, 2, device="tpu")
    with pytest.raises(RuntimeError, match="incompatible tensor type"):
        t.data = torch.zeros(2, 2).to_sparse()


def identity_pattern(model):
    ps = [p for _, p in model.named_parameters(remove_duplicate=False)]
    return [[p is q for q in ps] for p in ps]


@pytest.mark.parametrize("convert", ["to_empty", "load_state_dict_assign", "deepcopy"])
def test_conversions_keep_tying_as_on_cpu(convert):
    def run(device):
        m = make_model()
        if convert == "to_empty":
            m = m.to_empty(device=device)
        elif convert == "load_state_dict_assign":
            sd = {k: v.to(device) for k, v in make_model().state_dict().items()}
            m.load_state_dict(sd, assign=True)
        else:
            m = copy.deepcopy(m.to(device))
        return m

    ref, got = run("cpu"), run("tpu")
    assert identity_pattern(got) == identity_pattern(ref)
    assert {p.device.type for p in got.parameters()} == {"tpu"}


def test_parametrize_and_functional_call_keep_tying():
    from torch.nn.utils import parametrize

    class Scale(nn.Module):
        def forward(self, w):
            return w * 2

    def run(device):
        m = make_model()
        parametrize.register_parametrization(m.embed_tokens, "weight", Scale())
        m.to(device)
        idx = batch(1).to(device)
        out = m(idx)
        orig = m.embed_tokens.parametrizations.weight.original
        params = {k: v.detach() + 1 for k, v in m.named_parameters()}
        fc = torch.func.functional_call(m, params, (idx,))  # tie_weights=True by default
        return m, orig, out, fc

    ref_m, ref_orig, ref_out, ref_fc = run("cpu")
    m, orig, out, fc = run("tpu")
    assert orig.device.type == "tpu"
    assert (m.lm_head.weight is orig) == (ref_m.lm_head.weight is ref_orig)
    assert_same(out, ref_out, atol=1e-5, rtol=1e-4)
    assert_same(fc, ref_fc, atol=1e-5, rtol=1e-4)


def test_workaround_can_be_switched_off():
    from torch_tpu import _C

    assert _C._shallow_copy_fix()
    _C._set_shallow_copy_fix(False)
    try:
        m = make_model()
        w = m.embed_tokens.weight
        m.to("tpu")
        # torch 2.14.1 without the fix: new Parameters (pytorch#196975).
        fixed_in_torch = torch._has_compatible_shallow_copy_type(torch.zeros(1), torch.zeros(1, device="tpu"))
        assert (m.embed_tokens.weight is w) == fixed_in_torch
    finally:
        _C._set_shallow_copy_fix(True)
