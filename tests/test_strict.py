"""Strict eager mode: one cached executable per op signature, asynchronous
execution, runtime scalars, and the fork guard. Counts come from
torch.tpu.compile_stats(); no timing is asserted here."""
import pytest
import torch
import torch.nn as nn
import torch.nn.functional as F
from _helpers import ON_TPU, tpu_only
from test_errors import run_python

pytestmark = tpu_only


@pytest.fixture(autouse=True)
def strict_mode():
    """These tests count per-op executables, so they run in STRICT whatever
    mode the environment chose for the rest of the suite."""
    from torch_tpu.execution_mode import EagerMode, eager_mode
    with eager_mode(EagerMode.STRICT):
        yield


def compiles():
    return torch.tpu.compile_stats()["compiles"] if ON_TPU else 0


def test_cache_hit_compiles_nothing():
    a = torch.randn(5, 7, device="tpu")
    b = torch.randn(5, 7, device="tpu")
    (a + b).cpu()
    before = compiles()
    hits = torch.tpu.compile_stats()["cache_hits"]
    for _ in range(5):
        (a + b).cpu()
    assert compiles() == before
    assert torch.tpu.compile_stats()["cache_hits"] > hits


def test_new_shape_compiles_once():
    before = compiles()
    x = torch.randn(3, 11, device="tpu")
    (x * x).cpu()
    mid = compiles()
    assert mid > before
    (x * x).cpu()
    assert compiles() == mid


@pytest.mark.parametrize("values", [(0.5, 2.0, -3.25), (1, 7, -2)])
def test_scalars_are_runtime_inputs(values):
    x = torch.randn(4, 6, device="tpu")
    x.mul(values[0]).add(values[0], alpha=values[0]).cpu()
    before = compiles()
    for v in values[1:]:
        got = x.mul(v).add(v, alpha=v)
        torch.testing.assert_close(got.cpu(), x.cpu().mul(v).add(v, alpha=v))
    assert compiles() == before


@pytest.mark.parametrize("dtype", [torch.int64, torch.float32, torch.float64, torch.bfloat16, torch.int32])
def test_arange_compiles_once_per_length(dtype):
    # a decoder's cache position, arange(past, past + 1), each token: start and step are runtime
    # scalars, the length (ATen's rule) is the key
    torch.arange(0, 3, dtype=dtype, device="tpu").cpu()
    torch.arange(0, 1, dtype=dtype, device="tpu").cpu()
    if dtype.is_floating_point:  # Python float scalars are another key (runtime f64 inputs)
        torch.arange(0.0, 1.5, 0.5, dtype=dtype, device="tpu").cpu()
    before = compiles()
    for past in range(1, 9):
        ranges = [(past, past + 1, 1), (past, past + 3, 1), (past * 2, past * 2 - 3, -1)]
        if dtype.is_floating_point:
            ranges.append((0.5 * past, 0.5 * past + 1.5, 0.5))
        for start, end, step in ranges:
            want = torch.arange(start, end, step, dtype=dtype)
            got = torch.arange(start, end, step, dtype=dtype, device="tpu")
            assert got.shape == want.shape
            torch.testing.assert_close(got.cpu(), want, rtol=0, atol=0)
    assert compiles() == before


def test_arange_errors_like_cpu():
    for start, end, step in ((0, 5, 0), (5, 0, 1), (0, float("inf"), 1), (0, float("nan"), 1)):
        with pytest.raises(RuntimeError) as cpu:
            torch.arange(start, end, step)
        with pytest.raises(RuntimeError) as dev:
            torch.arange(start, end, step, device="tpu")
        assert str(cpu.value).split("\n")[0] in str(dev.value)


def test_view_offsets_are_runtime_inputs():
    base = torch.arange(40, dtype=torch.float32, device="tpu").reshape(10, 4)
    (base[0:3] * 2).cpu()
    base[0:3].add_(1)
    base.cpu()
    before = compiles()
    for lo in range(1, 7):
        torch.testing.assert_close((base[lo:lo + 3] * 2).cpu(), base.cpu()[lo:lo + 3] * 2)
        base[lo:lo + 3].add_(1)
    assert compiles() == before


def test_training_loop_stops_compiling_after_first_step():
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(12, 16), nn.ReLU(), nn.Linear(16, 3)).to("tpu")
    opt = torch.optim.AdamW(model.parameters(), lr=1e-2)
    data = torch.randn(64, 12, device="tpu")
    target = torch.randint(0, 3, (64,), device="tpu")
    counts = []
    for step in range(6):
        lo = (step * 8) % 48
        opt.zero_grad()
        loss = F.cross_entropy(model(data[lo:lo + 8]), target[lo:lo + 8])
        loss.backward()
        opt.step()
        loss.item()
        counts.append(compiles())
    # step 2 may still compile (AdamW's state exists from step 2 on); after that nothing
    assert counts[2:] == [counts[2]] * (len(counts) - 2), counts


def test_execution_is_asynchronous_and_synchronize_waits():
    x = torch.randn(256, 256, device="tpu")
    y = x
    for _ in range(20):
        y = y @ x * 0.01
    torch.tpu.synchronize()
    torch.testing.assert_close(y.cpu(), _chain_on_cpu(x.cpu()), rtol=1e-4, atol=1e-5)


def _chain_on_cpu(x):
    y = x
    for _ in range(20):
        y = y @ x * 0.01
    return y


def test_use_after_fork_raises_clear_error():
    res = run_python("""
        import os, torch, torch_tpu
        x = torch.ones(3, device='tpu')
        assert x.sum().item() == 3
        pid = os.fork()
        if pid == 0:
            try:
                (x + 1).cpu()
                os._exit(3)
            except RuntimeError as e:
                os._exit(0 if 'Cannot re-initialize TPU in forked subprocess' in str(e) else 4)  # torch.cuda's words
        _, status = os.waitpid(pid, 0)
        print('CHILD', os.waitstatus_to_exitcode(status))
        print('PARENT', (x + 1).sum().item())
    """)
    assert res.returncode == 0, res.stderr
    assert "CHILD 0" in res.stdout, res.stdout + res.stderr
    assert "PARENT 6.0" in res.stdout
