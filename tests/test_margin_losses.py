"""multi_margin_loss and multilabel_margin_loss (issue #13: ops that were
missing): values and gradients against CPU in Strict, Debug and DeferAndFuse
and under torch.compile, every reduction, p = 1 and 2, class weights, margins,
1-D inputs, repeated and unlisted targets; and CPU's errors for targets out of
range, an unsupported p and a weight of another dtype. Half and bfloat16,
which CPU refuses and CUDA computes, are checked against a float32 CPU run.
"""
import pytest
import torch
import torch.nn.functional as F

from _helpers import DEV, assert_same, assert_same_error, check, make_tensor, tpu_only
from _helpers import each_eager_mode  # noqa: F401

REDUCTIONS = ["mean", "sum", "none"]


def grad_input(shape, dtype=torch.float64, seed=0):
    return make_tensor(shape, dtype, seed=seed).requires_grad_()


@pytest.mark.parametrize("reduction", REDUCTIONS)
@pytest.mark.parametrize("p", [1, 2])
@pytest.mark.parametrize("weighted", [False, True], ids=["plain", "weighted"])
def test_multi_margin_loss(reduction, p, weighted):
    x = grad_input((6, 5), seed=p)
    target = torch.tensor([0, 4, 2, 2, 1, 3])
    weight = make_tensor((5,), torch.float64, seed=9).abs() if weighted else None
    check(lambda x, t, w: F.multi_margin_loss(x, t, p=p, margin=0.7, weight=w, reduction=reduction),
          x, target, weight)


@pytest.mark.parametrize("reduction", REDUCTIONS)
def test_multi_margin_loss_one_sample_shapes(reduction):
    x = grad_input((7,), torch.float32, seed=3)
    check(lambda x, t: F.multi_margin_loss(x, t, reduction=reduction), x, torch.tensor(5))
    check(lambda x, t: F.multi_margin_loss(x, t, reduction=reduction), x, torch.tensor([2]))
    check(lambda x, t: F.multi_margin_loss(x, t, reduction=reduction), grad_input((), torch.float32), torch.tensor(0))


def test_multi_margin_loss_module_trains_like_cpu():
    torch.manual_seed(0)
    cpu = torch.nn.Linear(8, 4).double()
    dev = torch.nn.Linear(8, 4).double()
    dev.load_state_dict(cpu.state_dict())
    dev.to(DEV)
    loss_fn = torch.nn.MultiMarginLoss(p=2, margin=0.5)
    opt_c, opt_d = torch.optim.SGD(cpu.parameters(), lr=0.5), torch.optim.SGD(dev.parameters(), lr=0.5)
    x, y = make_tensor((16, 8), torch.float64, seed=4), torch.arange(16) % 4
    for _ in range(5):
        for model, opt, d in ((cpu, opt_c, "cpu"), (dev, opt_d, DEV)):
            opt.zero_grad()
            loss_fn(model(x.to(d)), y.to(d)).backward()
            opt.step()
    assert_same(dev.weight.detach(), cpu.weight.detach())


@pytest.mark.parametrize("reduction", REDUCTIONS)
def test_multilabel_margin_loss(reduction):
    x = grad_input((4, 5), seed=1)
    # lists end at the first negative entry; later entries are ignored, a class may repeat
    target = torch.tensor([[3, 0, -1, 1, 4], [0, 0, 2, -1, -1], [-1, 1, 2, 3, 4], [4, 3, 2, 1, 0]])
    check(lambda x, t: F.multilabel_margin_loss(x, t, reduction=reduction), x, target)
    check(lambda x, t: torch.ops.aten.multilabel_margin_loss_forward(x, t, 1 if reduction == "mean" else 0),
          x, target)


@pytest.mark.parametrize("reduction", REDUCTIONS)
def test_multilabel_margin_loss_one_sample(reduction):
    x = grad_input((6,), torch.float32, seed=2)
    check(lambda x, t: F.multilabel_margin_loss(x, t, reduction=reduction), x, torch.tensor([5, 1, -1, 0, 0, 0]))


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16], ids=str)
def test_low_precision_computed_like_cuda(dtype):
    # CPU has no half kernels for these losses (NotImplementedError); CUDA computes them
    x = make_tensor((5, 6), torch.float32, seed=5).to(dtype)
    t = torch.tensor([1, 5, 0, 2, 2])
    ref = F.multi_margin_loss(x.float(), t, reduction="none")
    got = F.multi_margin_loss(x.to(DEV), t.to(DEV), reduction="none")
    assert got.dtype == dtype
    assert_same(got.float(), ref, atol=1e-2, rtol=1e-2)
    tl = torch.tensor([[1, 5, -1, 0, 0, 0]] * 5)
    ref = F.multilabel_margin_loss(x.float(), tl, reduction="sum")
    got = F.multilabel_margin_loss(x.to(DEV), tl.to(DEV), reduction="sum")
    assert got.dtype == dtype
    assert_same(got.float(), ref, atol=5e-2, rtol=1e-2)


@pytest.mark.parametrize("bad", [5, -1, 100])
def test_multi_margin_target_out_of_range(bad):
    x = make_tensor((3, 5))
    t = torch.tensor([0, bad, 1])
    cpu_e, dev_e = assert_same_error(lambda x, t: F.multi_margin_loss(x, t).cpu(), x, t)
    assert "target out of range" in str(dev_e)


@pytest.mark.parametrize("bad", [5, -2])
def test_multilabel_target_out_of_range(bad):
    # checked over every entry, listed or not, as CPU does
    x = make_tensor((2, 5))
    t = torch.tensor([[0, -1, bad, 1, 1], [1, 2, -1, 0, 0]])
    cpu_e, dev_e = assert_same_error(lambda x, t: F.multilabel_margin_loss(x, t).cpu(), x, t)
    assert "out of range" in str(dev_e)


def test_multi_margin_refusals_like_cpu():
    x = make_tensor((3, 5))
    t = torch.tensor([0, 1, 2])
    _, e = assert_same_error(lambda x, t: torch.ops.aten.multi_margin_loss(x, t, 3, 1.0, None, 1), x, t)
    assert "only p == 1 and p == 2 supported" in str(e)
    _, e = assert_same_error(lambda x, t, w: F.multi_margin_loss(x.double(), t, weight=w), x, t, torch.ones(5))
    assert "expected scalar type Double but found Float" in str(e)
    assert_same_error(lambda x, t: F.multi_margin_loss(x, t), x, torch.tensor([0, 1]))  # inconsistent target size


@tpu_only
def test_margin_losses_under_compile():
    def fn(x, t, tl, w):
        return (F.multi_margin_loss(x, t, p=2, weight=w) + F.multilabel_margin_loss(x, tl, reduction="sum"),
                F.multi_margin_loss(x, t, reduction="none"))

    x = make_tensor((4, 5), seed=7)
    t, w = torch.tensor([4, 0, 1, 1]), make_tensor((5,), seed=8).abs()
    tl = torch.tensor([[3, 0, -1, 1, 4], [0, 0, 2, -1, -1], [-1, 1, 2, 3, 4], [4, 3, 2, 1, 0]])
    xc, xd = x.clone().requires_grad_(), x.to(DEV).requires_grad_()
    ref = fn(xc, t, tl, w)
    got = torch.compile(fn, backend="tpu")(xd, t.to(DEV), tl.to(DEV), w.to(DEV))
    assert_same(got, ref)
    ref[0].backward()
    got[0].backward()
    assert_same(xd.grad, xc.grad)


@pytest.mark.parametrize("case", [
    lambda: F.multi_margin_loss(torch.randn(5, 4), torch.zeros(3, dtype=torch.long)),
    lambda: F.multi_margin_loss(torch.randn(5, 0), torch.zeros(5, dtype=torch.long)),
    lambda: F.multi_margin_loss(torch.randn(5, 4), torch.zeros(5, dtype=torch.long), weight=torch.ones(3)),
    lambda: F.multilabel_margin_loss(torch.randn(5, 4), torch.zeros(5, 3, dtype=torch.long)),
    lambda: F.multilabel_margin_loss(torch.randn(4), torch.zeros(3, dtype=torch.long)),
    lambda: F.multilabel_margin_loss(torch.randn(2, 3, 4), torch.zeros(2, 3, 4, dtype=torch.long)),
    lambda: F.multi_margin_loss(torch.randn(5, 4), torch.zeros(5)),
    lambda: F.multilabel_margin_loss(torch.randn(5, 4), torch.zeros(5, 4, dtype=torch.int32)),
], ids=["mm-target", "mm-empty", "mm-weight", "ml-target", "ml-1d-target", "ml-3d", "mm-float-target",
        "ml-int-target"])
def test_shape_errors_word_for_word(case):
    cpu_e = dev_e = None
    try:
        case()
    except RuntimeError as e:
        cpu_e = e
    torch.set_default_device(DEV)
    try:
        case()
    except RuntimeError as e:
        dev_e = e
    finally:
        torch.set_default_device(None)
    assert cpu_e is not None and dev_e is not None
    assert str(cpu_e) in str(dev_e), (str(cpu_e), str(dev_e))
