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
