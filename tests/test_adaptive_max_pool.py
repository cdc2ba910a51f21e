"""Adaptive max pooling (issue #13: adaptive_max_pool2d/3d and their out= forms
were missing) against CPU in every eager mode: values, indices (first maximum
on ties, the last NaN wins as in CPU's kernel), gradients, out=, 1-D via 2-D."""
import pytest
import torch
import torch.nn.functional as F
from _helpers import DEV, check, each_eager_mode, make_tensor  # noqa: F401


def leaf(shape, seed=0, dtype=torch.float32):
    return make_tensor(shape, dtype, seed=seed).requires_grad_()


@pytest.mark.parametrize("shape,out", [((2, 3, 7, 7), (3, 2)), ((3, 7, 9), (4, 4)), ((2, 3, 5, 5), (5, 5)),
                                       ((1, 2, 5, 5), (7, 8)), ((2, 2, 6, 7), (4, None))])
def test_adaptive_max_pool2d(shape, out):
    check(lambda x: F.adaptive_max_pool2d(x, out, return_indices=True), leaf(shape))


def test_adaptive_max_pool3d():
    check(lambda x: F.adaptive_max_pool3d(x, (2, 3, 4), return_indices=True), leaf((2, 2, 5, 6, 7)))


def test_adaptive_max_pool1d():
    check(lambda x: F.adaptive_max_pool1d(x, 4, return_indices=True), leaf((2, 3, 10)))


def test_ties_and_nan_pick_cpus_index():
    x = torch.randint(0, 3, (2, 2, 6, 7)).float()  # many ties
    x[0, 0, 1, 1] = x[0, 0, 2, 2] = float("nan")
    x[1, 1, :3, :3] = 1.0
    check(lambda x: F.adaptive_max_pool2d(x, (2, 3), return_indices=True), x)


@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float64])
def test_other_dtypes(dtype):
    check(lambda x: F.adaptive_max_pool2d(x, (2, 3), return_indices=True), leaf((2, 3, 5, 7), dtype=dtype))


def test_out_variant():
    x = make_tensor((2, 3, 7, 6), torch.float32)
    ref = torch._C._nn.adaptive_max_pool2d(x, (3, 3))
    vals = torch.empty(0, device=DEV)
    idx = torch.empty(0, dtype=torch.long, device=DEV)
    got = torch._C._nn.adaptive_max_pool2d(x.to(DEV), (3, 3), out=(vals, idx))
    assert got[0] is vals and got[1] is idx
    torch.testing.assert_close(vals.cpu(), ref[0])
    assert torch.equal(idx.cpu(), ref[1])
