"""Foreach ops (torch._foreach_*): values match CPU in every mode, and in
Strict mode one call is one executable whatever the list's length (the
per-tensor ops run as one graph, csrc/aten/foreach.cpp)."""
import pytest
import torch

from _helpers import DEV, check, sync, tpu_only
from _helpers import each_eager_mode  # noqa: F401  (every test runs in STRICT, DEBUG and DEFER_AND_FUSE)

SHAPES = [(3, 4), (5,), (2, 3, 2), ()]


def _lists(k, dtype=torch.float32, seed=0):
    g = torch.Generator().manual_seed(seed)
    return [[(torch.rand(s, generator=g) + 0.5).to(dtype) for s in SHAPES] for _ in range(k)]


SC = [0.5, 2.0, -1.5, 3.0]  # one scalar per tensor (ScalarList overloads)

CASES = {
    # functional: the results; in place: the mutated list
    "add.Scalar": lambda a, b, c: torch._foreach_add(a, 2.5),
    "add_.List": lambda a, b, c: (torch._foreach_add_(a, b, alpha=-0.5), a)[1],
    "add.ScalarList": lambda a, b, c: torch._foreach_add(a, SC),
    "add_.Tensor": lambda a, b, c: (torch._foreach_add_(a, b[0].new_tensor(1.25), alpha=2), a)[1],
    "sub_.Scalar": lambda a, b, c: (torch._foreach_sub_(a, 1.0), a)[1],
    "sub.List": lambda a, b, c: torch._foreach_sub(a, b),
    "mul_.Scalar": lambda a, b, c: (torch._foreach_mul_(a, 0.9), a)[1],
    "mul.List": lambda a, b, c: torch._foreach_mul(a, b),
    "mul_.ScalarList": lambda a, b, c: (torch._foreach_mul_(a, SC), a)[1],
    "mul.Tensor": lambda a, b, c: torch._foreach_mul(a, b[1].new_tensor(3.0)),
    "div_.ScalarList": lambda a, b, c: (torch._foreach_div_(a, SC), a)[1],
    "div.List": lambda a, b, c: torch._foreach_div(a, b),
    "div_.Tensor": lambda a, b, c: (torch._foreach_div_(a, b[0].new_tensor(4.0)), a)[1],
    "clamp_min_.Scalar": lambda a, b, c: (torch._foreach_clamp_min_(a, 0.9), a)[1],
    "clamp_max.List": lambda a, b, c: torch._foreach_clamp_max(a, b),
    "maximum_.List": lambda a, b, c: (torch._foreach_maximum_(a, b), a)[1],
    "minimum.ScalarList": lambda a, b, c: torch._foreach_minimum(a, SC),
    "addcmul_.Scalar": lambda a, b, c: (torch._foreach_addcmul_(a, b, c, value=0.3), a)[1],
    "addcmul.ScalarList": lambda a, b, c: torch._foreach_addcmul(a, b, c, SC),
    "addcdiv_.ScalarList": lambda a, b, c: (torch._foreach_addcdiv_(a, b, c, SC), a)[1],
    "addcdiv.Tensor": lambda a, b, c: torch._foreach_addcdiv(a, b, c, torch.tensor(SC)),
    "lerp_.Scalar": lambda a, b, c: (torch._foreach_lerp_(a, b, 0.1), a)[1],
    "lerp.List": lambda a, b, c: torch._foreach_lerp(a, b, c),
    "pow.Scalar": lambda a, b, c: torch._foreach_pow(a, 1.5),
    "pow_.List": lambda a, b, c: (torch._foreach_pow_(a, b), a)[1],
    "pow.ScalarAndTensor": lambda a, b, c: torch._foreach_pow(0.9, a),
    "sqrt": lambda a, b, c: torch._foreach_sqrt(a),
    "rsqrt_": lambda a, b, c: (torch._foreach_rsqrt_(a), a)[1],
    "neg_": lambda a, b, c: (torch._foreach_neg_(a), a)[1],
    "reciprocal": lambda a, b, c: torch._foreach_reciprocal(a),
    "abs": lambda a, b, c: torch._foreach_abs(torch._foreach_sub(a, 1.0)),
    "sign_": lambda a, b, c: (lambda s: (torch._foreach_sign_(s), s)[1])(torch._foreach_sub(a, 1.0)),
    "exp": lambda a, b, c: torch._foreach_exp(a),
    "log_": lambda a, b, c: (torch._foreach_log_(a), a)[1],
    "sigmoid": lambda a, b, c: torch._foreach_sigmoid(a),
    "tanh_": lambda a, b, c: (torch._foreach_tanh_(a), a)[1],
    "zero_": lambda a, b, c: (torch._foreach_zero_(a), a)[1],
    "copy_": lambda a, b, c: (torch._foreach_copy_(a, b), a)[1],
    "norm": lambda a, b, c: torch._foreach_norm(a, 2),
    "norm_inf": lambda a, b, c: torch._foreach_norm(a, float("inf")),
}


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16], ids=["f32", "bf16"])
@pytest.mark.parametrize("case", list(CASES))
def test_foreach_matches_cpu(case, dtype):
    a, b, c = _lists(3, dtype)
    check(lambda a, b, c: CASES[case](a, b, c), a, b, c)


def test_foreach_error_matches_cpu_and_leaves_strict_op_by_op():
    # a list-length mismatch raises CPU's error; the next op still runs by itself
    a, b, _ = _lists(3)
    for dev in ("cpu", DEV):
        x = [t.to(dev) for t in a]
        y = [t.to(dev) for t in b[:2]]
        with pytest.raises(RuntimeError, match="same number of tensors|same length|must have the same"):
            torch._foreach_add_(x, y)
    x = [t.to(DEV) for t in a]
    with pytest.raises(RuntimeError):
        torch._foreach_add_(x, [torch.ones(7, device=DEV)] * len(x))  # shapes do not broadcast
    torch.testing.assert_close((x[0] * 2).cpu(), a[0] * 2)


def _executions():
    sync()
    return torch.tpu.compile_stats()["executions"]


@tpu_only
@pytest.mark.parametrize("n", [3, 12])
def test_strict_foreach_call_is_one_execution(n):
    from torch_tpu.execution_mode import EagerMode, eager_mode
    xs = [torch.rand(4, k + 1, device=DEV) for k in range(n)]
    ys = [torch.rand(4, k + 1, device=DEV) for k in range(n)]
    want = [(x.cpu() * 0.9 + y.cpu() * 0.1) for x, y in zip(xs, ys)]
    with eager_mode(EagerMode.STRICT):
        torch._foreach_lerp(xs, ys, 0.1)  # compiles
        before = _executions()
        got = torch._foreach_lerp(xs, ys, 0.1)
        assert _executions() - before == 1
    for g, w in zip(got, want):
        torch.testing.assert_close(g.cpu(), w)


@tpu_only
@pytest.mark.parametrize("impl,most", [("foreach", 8), ("fused", 2)])
def test_strict_adamw_step_executions_do_not_grow_with_parameters(impl, most):
    # foreach AdamW (torch's default on 'tpu'): one executable per foreach
    # call; fused=True: the step counts' foreach add and the whole update
    from torch_tpu.execution_mode import EagerMode, eager_mode

    def step_executions(n_params):
        torch.manual_seed(0)
        params = [torch.nn.Parameter(torch.rand(8, 4)) for _ in range(n_params)]
        grads = [torch.rand(8, 4) for _ in range(n_params)]
        on_dev = [torch.nn.Parameter(p.detach().to(DEV)) for p in params]
        for ps, gs in ((params, grads), (on_dev, [g.to(DEV) for g in grads])):
            opt = torch.optim.AdamW(ps, lr=0.1, weight_decay=0.1, **{impl: True})
            for p, g in zip(ps, gs):
                p.grad = g
            opt.step()
            before = _executions()
            opt.step()
            count = _executions() - before
        for p, q in zip(params, on_dev):
            torch.testing.assert_close(q.detach().cpu(), p.detach(), rtol=1e-4, atol=1e-5)
        return count

    with eager_mode(EagerMode.STRICT):
        assert step_executions(2) == step_executions(10) <= most


@tpu_only
def test_strict_fused_region_failure_is_a_clear_error():
    import torch_tpu
    from torch_tpu.execution_mode import EagerMode, eager_mode
    xs = [torch.ones(3, device=DEV) for _ in range(3)]
    other = torch.ones(3, device=DEV)
    with eager_mode(EagerMode.STRICT):
        torch_tpu._C._inject_graph_failure(True)
        try:
            with pytest.raises(RuntimeError, match=r"fused region.*mul"):
                torch._foreach_mul_(xs, 2.0)
        finally:
            torch_tpu._C._inject_graph_failure(False)
        # as in DeferAndFuse, the values the graph was to write are lost, and reading one says so
        with pytest.raises(RuntimeError, match="failed to run"):
            xs[0].cpu()
        # the rest of the process goes on op by op
        before = _executions()
        assert (other + 1).sum().item() == 6.0
        assert _executions() - before == 2
