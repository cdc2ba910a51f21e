"""Advanced indexing, sort/topk, scans, norms and losses against CPU."""
import pytest
import torch
import torch.nn.functional as F
from _helpers import DEV, ON_TPU, check, make_tensor


def leaf(shape, seed=0):
    return make_tensor(shape, torch.float32, seed=seed).requires_grad_()


@pytest.mark.parametrize("index", [
    lambda x: x[torch.tensor([0, 2, -1])],
    lambda x: x[:, torch.tensor([[1, 0], [3, 3]])],
    lambda x: x[torch.tensor([0, 1]), :, torch.tensor([2, 0])],
    lambda x: x[torch.tensor([1, 0]), torch.tensor([2, 3])],
    lambda x: x[1:, torch.tensor([0, 2])],
])
def test_advanced_index_forward_backward(index):
    check(index, leaf((3, 4, 5)))


@pytest.mark.parametrize("accumulate", [False, True])
def test_index_put(accumulate):
    def fn(x, v):
        y = x.clone()
        return y.index_put_((torch.tensor([0, 2, 0], device=x.device), torch.tensor([1, 1, 1], device=x.device)),
                            v, accumulate=accumulate)
    check(fn, make_tensor((3, 4)), make_tensor((3,)) if accumulate else make_tensor((1,)))


def test_setitem_with_index_tensor():
    def fn(x):
        y = x.clone()
        y[torch.tensor([2, 0], device=x.device)] = 7.0
        return y
    check(fn, make_tensor((4, 3)))


@pytest.mark.parametrize("descending", [False, True])
def test_sort(descending):
    x = torch.tensor([[3.0, 1.0, 2.0, 1.0], [float("nan"), -1.0, 5.0, 0.0]])
    check(lambda x: torch.sort(x, dim=1, descending=descending, stable=True), x)


@pytest.mark.parametrize("largest", [True, False])
def test_topk(largest):
    check(lambda x: torch.topk(x, 3, dim=-1, largest=largest), leaf((2, 7)))


@pytest.mark.parametrize("fn", [torch.cumsum, torch.cumprod])
def test_scans(fn):
    check(lambda x: fn(x, dim=1), leaf((3, 6)))
    check(lambda x: fn(x, dim=0), torch.arange(6).reshape(3, 2))


@pytest.mark.parametrize("ord", [2, 1, float("inf"), 3.0, 0])
def test_vector_norm(ord):
    check(lambda x: torch.linalg.vector_norm(x, ord=ord, dim=1), leaf((3, 5)), grad=ord != 0)


def test_clip_grad_norm_and_mse():
    def fn(device):
        torch.manual_seed(0)
        lin = torch.nn.Linear(4, 3).to(device)
        x = make_tensor((6, 4)).to(device)
        loss = F.mse_loss(lin(x), make_tensor((6, 3), seed=1).to(device))
        loss.backward()
        total = torch.nn.utils.clip_grad_norm_(lin.parameters(), 0.1)
        return loss, total, lin.weight.grad, lin.bias.grad
    from _helpers import check_scenario
    check_scenario(fn, atol=1e-5, rtol=1e-4)


def test_boolean_mask_index_and_setitem():
    def fn(x):
        y = x.clone()
        m = y > 0.2
        picked = y[m]
        y[m] = 0.0
        y[y < -0.5] += 1.0
        return picked, y, torch.nonzero(m), torch.masked_select(x, m)
    check(fn, make_tensor((4, 5)))


def test_mask_on_leading_dims_and_backward():
    mask = torch.tensor([True, False, True])
    check(lambda x: x[mask] * 2, leaf((3, 4)))


def test_bincount_matches_cpu_through_the_host_path():
    # the length depends on the values: an explicit, counted host path (as nonzero syncs)
    x = torch.tensor([1, 3, 3, 0, 7, 3])
    w = torch.linspace(0.5, 3.0, 6)
    before = torch.tpu.host_op_stats().get("aten::bincount", 0) if ON_TPU else 0
    for args, kw in [((x,), {}), ((x, w), {}), ((x,), {"minlength": 12}), ((torch.tensor([], dtype=torch.long),), {})]:
        ref = torch.bincount(*args, **kw)
        got = torch.bincount(*[a.to(DEV) for a in args], **kw)
        assert got.device.type == DEV and got.dtype == ref.dtype
        torch.testing.assert_close(got.cpu(), ref)
    if ON_TPU:
        assert torch.tpu.host_op_stats()["aten::bincount"] == before + 4
    with pytest.raises(RuntimeError, match="non-negative"):
        torch.bincount(torch.tensor([-1]).to(DEV))
