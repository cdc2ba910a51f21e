"""Out-of-range indices raise as on CPU (issue #13, item 0b), never clamp.

Every indexing op checks its indices on the device, inside the executable
that uses them (one extra 0-d result per check). The result is read at the
next sync point (`.cpu()`, `.item()`, print, `torch.tpu.synchronize()`), at
once in Debug mode, and raises the exception type CPU raises for the same
input, with CPU's message and the op's name. CPU is the oracle for which
inputs are valid (negative indices: allowed by take/put/x[idx]/index_fill,
refused by gather/scatter/index_select/index_add/index_copy).
"""
import re

import pytest
import torch
import torch.nn.functional as F

from _helpers import each_eager_mode, tpu_only  # noqa: F401  (each test runs in every mode)

pytestmark = tpu_only

X = torch.arange(12.0).view(3, 4)
ONES24 = torch.ones(2, 4)


def idx(*v):
    return torch.tensor(v)


CASES = {
    "embedding": lambda x, i: F.embedding(i, x),
    "index_select": lambda x, i: x.index_select(0, i),
    "gather": lambda x, i: x.gather(0, i.view(-1, 1)),
    "take": lambda x, i: x.take(i * 3),
    "getitem": lambda x, i: x[i],
    "getitem_second_dim": lambda x, i: x[:, i],
    "setitem": lambda x, i: x.clone().__setitem__(i, 1.0),
    "index_put_accumulate": lambda x, i: x.clone().index_put_((i,), torch.tensor(1.0, device=x.device),
                                                              accumulate=True),
    "index_add_": lambda x, i: x.clone().index_add_(0, i, ONES24.to(x.device)),
    "index_copy_": lambda x, i: x.clone().index_copy_(0, i, ONES24.to(x.device)),
    "index_fill_": lambda x, i: x.clone().index_fill_(0, i, 1.0),
    "scatter_": lambda x, i: x.clone().scatter_(0, i.view(-1, 1), torch.ones(2, 1, device=x.device)),
    "scatter_add_": lambda x, i: x.clone().scatter_add_(0, i.view(-1, 1), torch.ones(2, 1, device=x.device)),
    "scatter_reduce": lambda x, i: x.scatter_reduce(0, i.view(-1, 1), torch.ones(2, 1, device=x.device), "amax"),
    "put_": lambda x, i: x.clone().put_(i * 3, torch.ones(2, device=x.device)),
    "cross_entropy": lambda x, i: F.cross_entropy(x[:2], i),
    "nll_loss2d": lambda x, i: F.nll_loss(x[:2].view(2, 2, 2, 1), i.view(2, 1, 1).expand(2, 2, 1)),
    "embedding_bag": lambda x, i: F.embedding_bag(i, x, torch.tensor([0], device=x.device)),
}

BAD = {"too_large": (0, 5), "too_negative": (0, -5), "negative": (1, -1)}


def shape_of(message):
    return " ".join(re.sub(r"-?\d+", "", message).split()).rstrip(".")


def run_on(device, fn, values):
    x, i = X.to(device), idx(*values).to(device)
    out = fn(x, i)
    if device != "cpu":
        torch.tpu.synchronize()  # a sync point: the device-side checks are read here
    return out


@pytest.mark.parametrize("bad", list(BAD))
@pytest.mark.parametrize("op", list(CASES))
def test_out_of_range_raises_like_cpu(op, bad):
    fn, values = CASES[op], BAD[bad]
    try:
        expected = run_on("cpu", fn, values)
        cpu_error = None
    except Exception as e:  # noqa: BLE001  (CPU decides what is an error)
        cpu_error = e
    if cpu_error is None:
        got = run_on("tpu", fn, values)
        if isinstance(expected, torch.Tensor):
            torch.testing.assert_close(got.cpu(), expected)
        return
    with pytest.raises(type(cpu_error)) as info:
        run_on("tpu", fn, values)
    assert type(info.value) is type(cpu_error)
    message = str(info.value)
    # CPU's message, with its numbers (positions may differ) masked.
    assert shape_of(str(cpu_error).split("\n")[0].split(" (")[0]) in shape_of(message)
    assert "torch_tpu: device-side check of aten::" in message


def test_valid_indices_and_ignore_index_pass():
    x = X.to("tpu")
    assert x[idx(-1, 2).to("tpu")].cpu().equal(X[idx(-1, 2)])
    assert x.take(idx(-12, 11).to("tpu")).cpu().equal(X.take(idx(-12, 11)))
    t = idx(1, -100)
    got = F.cross_entropy(x[:2], t.to("tpu"), ignore_index=-100)
    torch.testing.assert_close(got.cpu(), F.cross_entropy(X[:2], t, ignore_index=-100))


def test_error_surfaces_at_item_and_the_error_is_not_sticky():
    x = X.to("tpu")
    with pytest.raises(IndexError, match="index out of range in self"):
        F.embedding(idx(0, 7).to("tpu"), x).sum().item()  # Debug: at the op; others: at item()
    # After the error the device keeps working (CUDA's device asserts are sticky; ours are not).
    assert (x + 1).sum().item() == float((X + 1).sum())


def test_debug_mode_raises_at_the_op():
    from torch_tpu.execution_mode import EagerMode, eager_mode
    x = X.to("tpu")
    with eager_mode(EagerMode.DEFER_NEVER_AND_LAUNCH_BLOCKING):
        with pytest.raises(IndexError, match="at the op"):
            x.index_select(0, idx(3).to("tpu"))  # no sync needed


def test_compiled_graph_checks_every_call():
    emb = torch.nn.Embedding(5, 3).to("tpu")
    f = torch.compile(lambda i: emb(i).sum(), backend="tpu")
    ok = idx(0, 4).to("tpu")
    for _ in range(3):  # the first call captures the graph, later calls replay it
        f(ok).item()
    with pytest.raises(IndexError, match="index out of range in self"):
        f(idx(0, 5).to("tpu")).item()
    assert f(ok).item() == pytest.approx(float(emb.weight[[0, 4]].sum()))


# torch._assert_async (TorchTitan's RoPE asserts its positions with it): a
# device-side check, as on CUDA, with CPU's message; raises at the next sync
# (at the op in Debug mode), passes for any nonzero value (NaN, complex 1j).
@pytest.mark.parametrize("value,args", [
    (torch.tensor(0.0), ()),
    (torch.tensor([False]), ("position {} beyond the cache",)),  # the user's braces stay as written
    (torch.tensor(0), ("",)),
], ids=["plain", "message", "empty_message"])
def test_assert_async_raises_cpus_error(value, args):
    with pytest.raises(RuntimeError) as cpu:
        torch._assert_async(value, *args)
    with pytest.raises(RuntimeError) as dev:
        torch._assert_async(value.to("tpu"), *args)
        torch.tpu.synchronize()
    assert str(cpu.value) in str(dev.value), (str(cpu.value), str(dev.value))


def test_assert_async_passes_nonzero_and_refuses_more_than_one_value():
    for v in [torch.tensor(True), torch.tensor(float("nan")), torch.tensor(1j), torch.tensor([3])]:
        torch._assert_async(v.to("tpu"), "never")
    torch.tpu.synchronize()
    for v in [torch.ones(2), torch.ones(0)]:
        with pytest.raises(RuntimeError) as cpu:
            torch._assert_async(v)
        with pytest.raises(RuntimeError, match=re.escape(str(cpu.value))):
            torch._assert_async(v.to("tpu"))


def test_assert_async_in_a_compiled_graph():
    f = torch.compile(lambda p: (torch._assert_async(p.max() < 8, "position too large"), p * 2)[1], backend="tpu")
    ok = idx(1, 7).to("tpu")
    for _ in range(3):
        assert f(ok).cpu().equal(idx(2, 14))
    with pytest.raises(RuntimeError, match="position too large"):
        f(idx(1, 8).to("tpu")).cpu()
