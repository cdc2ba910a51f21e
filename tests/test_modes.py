"""Execution-mode API and Debug mode (blocking, errors at the op, NaN check).
DeferAndFuse is not implemented yet: asking for it raises NotImplementedError."""
import pytest
import torch
import torch.nn as nn
import torch.nn.functional as F
from _helpers import check_scenario, tpu_only

pytestmark = tpu_only

if True:  # imported lazily so the CPU stand-in run can collect this module
    try:
        import torch_tpu
        from torch_tpu.execution_mode import EagerMode, eager_mode, get_eager_mode, set_eager_mode
    except ImportError:  # pragma: no cover - CPU stand-in without the backend
        pass


@pytest.fixture(autouse=True)
def restore_mode():
    yield
    set_eager_mode(EagerMode.STRICT)
    torch_tpu._C._set_debug_nans(False)


def test_default_is_strict_and_aliases():
    assert get_eager_mode() is EagerMode.STRICT
    assert EagerMode.DEFER_NEVER is EagerMode.STRICT
    assert EagerMode.DEFER_NEVER_AND_LAUNCH_BLOCKING is EagerMode.DEBUG
    from torch_tpu._internal.execution_mode import EagerMode as E2
    assert E2 is EagerMode


def test_set_as_call_and_as_context_manager():
    set_eager_mode(EagerMode.DEBUG)
    assert get_eager_mode() is EagerMode.DEBUG
    set_eager_mode(EagerMode.STRICT)
    with set_eager_mode(EagerMode.DEBUG):
        assert get_eager_mode() is EagerMode.DEBUG
        with eager_mode(EagerMode.STRICT):
            assert get_eager_mode() is EagerMode.STRICT
        assert get_eager_mode() is EagerMode.DEBUG
    assert get_eager_mode() is EagerMode.STRICT


def test_defer_and_fuse_says_not_implemented():
    with pytest.raises(NotImplementedError, match="DEFER_AND_FUSE"):
        set_eager_mode(EagerMode.DEFER_AND_FUSE)
    assert get_eager_mode() is EagerMode.STRICT


def test_backward_thread_sees_the_mode():
    seen = []

    class Probe(torch.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            return x * 1

        @staticmethod
        def backward(ctx, g):
            seen.append(get_eager_mode())
            return g

    x = torch.ones(3, device="tpu", requires_grad=True)
    with eager_mode(EagerMode.DEBUG):
        Probe.apply(x).sum().backward()
    assert seen == [EagerMode.DEBUG]


@pytest.mark.parametrize("mode", [EagerMode.STRICT, EagerMode.DEBUG])
def test_views_and_training_match_cpu_in_each_mode(mode):
    def scenario(device):
        torch.manual_seed(0)
        base = torch.arange(24, dtype=torch.float32, device=device).reshape(4, 6)
        v = base[1:, ::2].t()
        v.mul_(2)
        base.diagonal().add_(1)
        model = nn.Sequential(nn.Linear(6, 8), nn.GELU(), nn.Linear(8, 3)).to(device)
        opt = torch.optim.AdamW(model.parameters(), lr=0.01)
        losses = []
        for _ in range(3):
            opt.zero_grad()
            loss = F.cross_entropy(model(base), torch.tensor([0, 1, 2, 1], device=device))
            loss.backward()
            opt.step()
            losses.append(loss)
        return base, v, base._version, losses
    with eager_mode(mode):
        check_scenario(scenario, atol=1e-5, rtol=1e-5)


def test_debug_nan_check_names_the_op():
    torch_tpu._C._set_debug_nans(True)
    x = torch.zeros(4, device="tpu")
    with eager_mode(EagerMode.DEBUG):
        with pytest.raises(RuntimeError, match=r"div.*NaN or Inf|NaN or Inf.*div"):
            x / x
        assert (x + 1).sum().item() == 4  # still usable
    (x / x).cpu()  # strict mode does not check


def test_launch_blocking_env_starts_in_debug():
    from test_errors import run_python
    res = run_python("""
        import torch, torch_tpu
        from torch_tpu.execution_mode import get_eager_mode
        print(get_eager_mode().name)
    """, TORCH_TPU_LAUNCH_BLOCKING="1")
    assert res.returncode == 0, res.stderr
    assert res.stdout.strip().endswith("DEBUG")
