"""torch.histogram and torch.histogramdd (issue #13: ops that were missing)
against CPU in Strict, Debug and DeferAndFuse: bin counts, given ranges and
ranges from the data, edge tensors, weights, density, points on the edges and
outside them, empty inputs and equal minimum and maximum; and CPU's errors
(bad bins, ranges, weights, dtypes, and data that is not finite).
"""
import pytest
import torch

from _helpers import DEV, assert_same, check, make_tensor
from _helpers import each_eager_mode  # noqa: F401

NAN, INF = float("nan"), float("inf")


def grid_values(shape, dtype=torch.float32, seed=0):
    # multiples of 1/8 in [-2, 2]: many points fall exactly on edges
    g = torch.Generator().manual_seed(seed)
    return (torch.randint(-16, 17, shape, generator=g) / 8).to(dtype)


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64], ids=str)
@pytest.mark.parametrize("bins", [1, 4, 7])
def test_histogram_bin_count(dtype, bins):
    x = make_tensor((5, 8), dtype, seed=bins)
    check(lambda t: torch.histogram(t, bins), x)
    check(lambda t: torch.histogram(t, bins, range=(-0.5, 0.75)), x)
    check(lambda t: torch.histogram(t, bins, density=True), x)


def test_histogram_points_on_edges():
    x = grid_values((64,))
    check(lambda t: torch.histogram(t, 8, range=(-2.0, 2.0)), x)
    check(lambda t: torch.histogram(t, 4), x)


def test_histogram_weights_and_density():
    x = make_tensor((40,), torch.float64, seed=3)
    w = make_tensor((40,), torch.float64, seed=4).abs()
    check(lambda t, w: torch.histogram(t, 5, weight=w), x, w)
    check(lambda t, w: torch.histogram(t, 5, range=(-1.0, 1.0), weight=w, density=True), x, w)
    check(lambda t, w: torch.histogram(t.view(5, 8), 3, weight=w.view(8, 5)), x, w)  # weight: the same numel


def test_histogram_edge_tensor():
    x = make_tensor((50,), seed=5)
    edges = torch.tensor([-1.0, -0.25, 0.0, 0.5, 2.0])
    check(lambda t, e: torch.histogram(t, e), x, edges)
    check(lambda t, e: torch.histogram(t, e, density=True), x, edges)


def test_histogram_degenerate_inputs():
    check(lambda t: torch.histogram(t, 3), torch.tensor([]))
    check(lambda t: torch.histogram(t, 2, density=True), torch.tensor([]))  # 0 / 0: NaN, as on CPU
    check(lambda t: torch.histogramdd(t, [2, 2], density=True), torch.zeros(0, 2))
    check(lambda t: torch.histogram(t, 3), torch.tensor([1.5, 1.5]))
    check(lambda t: torch.histogram(t, 3, range=(2.0, 2.0)), torch.tensor([1.5, 2.0, 2.25]))
    # NaN and infinities outside a given range are skipped
    check(lambda t: torch.histogram(t, 3, range=(0.0, 1.0)), torch.tensor([NAN, INF, -INF, 0.5, 1.0]))


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64], ids=str)
def test_histogramdd(dtype):
    x = make_tensor((30, 3), dtype, seed=6)
    check(lambda t: torch.histogramdd(t, [2, 3, 4]), x)
    check(lambda t: torch.histogramdd(t, 3, range=[-1.0, 1.0, 0.0, 2.0, -2.0, 0.5]), x)
    w = make_tensor((30,), dtype, seed=7).abs()
    check(lambda t, w: torch.histogramdd(t, [3, 2, 2], weight=w, density=True), x, w)
    g = grid_values((4, 10, 2), dtype, seed=8)
    check(lambda t: torch.histogramdd(t, [4, 4], range=[-2.0, 2.0, -1.0, 1.0]), g)


def test_histogramdd_edge_tensors():
    x = make_tensor((25, 2), seed=9)
    edges = [torch.tensor([-1.0, 0.0, 1.0]), torch.tensor([-2.0, -0.5, 0.25, 0.5, 3.0])]
    check(lambda t, a, b: torch.histogramdd(t, [a, b]), x, *edges)
    check(lambda t, a, b: torch.histogramdd(t, [a, b], density=True), x, *edges)


def test_histogram_compiled_matches_cpu():
    x = make_tensor((64,), seed=10)
    ref = torch.histogram(x, 6, range=(-1.0, 1.0))
    got = torch.compile(lambda t: torch.histogram(t, 6, range=(-1.0, 1.0)), backend="tpu")(x.to(DEV))
    assert_same(tuple(got), tuple(ref))


def errors_alike(fn):
    cpu_e = dev_e = None
    try:
        fn("cpu")
    except Exception as e:  # noqa: BLE001 - the type is compared below
        cpu_e = e
    try:
        r = fn(DEV)
        if isinstance(r, tuple):
            r[0].cpu()
    except Exception as e:  # noqa: BLE001
        dev_e = e
    assert cpu_e is not None, "CPU accepted the input"
    assert type(dev_e) is type(cpu_e), (cpu_e, dev_e)
    return cpu_e, dev_e


@pytest.mark.parametrize("case", [
    lambda d: torch.histogram(torch.ones(4, device=d), 0),
    lambda d: torch.histogram(torch.ones(4, device=d), 3, range=(1.0, 2.0, 3.0)),
    lambda d: torch.histogram(torch.ones(4, device=d), 3, range=(INF, 2.0)),
    lambda d: torch.histogram(torch.ones(4, device=d), 3, range=(3.0, 2.0)),
    lambda d: torch.histogram(torch.ones(4, device=d), 3, weight=torch.ones(4, dtype=torch.float64, device=d)),
    lambda d: torch.histogram(torch.ones(4, device=d), torch.ones(2, 2, device=d)),
    lambda d: torch.histogram(torch.ones(4, device=d), torch.ones(0, device=d)),
    lambda d: torch.histogram(torch.ones(4, device=d), torch.ones(1, device=d)),
    lambda d: torch.histogram(torch.ones(4, device=d), torch.ones(3, dtype=torch.float64, device=d)),
    lambda d: torch.histogramdd(torch.ones(6, 2, device=d), [2, 2], weight=torch.ones(5, device=d)),
    lambda d: torch.histogramdd(torch.ones(6, 2, device=d), [2, 2], range=[0.0, 1.0]),
    lambda d: torch.histogramdd(torch.ones(6, 2, device=d), [2, 0]),
    lambda d: torch.ops.aten._histogramdd_bin_edges(torch.ones(6, 2, device=d), [2, 2, 2]),
    lambda d: torch.histogramdd(torch.ones(6, 2, device=d), [torch.ones(3, device=d)]),
], ids=["bins0", "range3", "range-inf", "range-order", "weight-dtype", "edges-2d", "edges-empty", "one-edge", "edges-dtype",
        "weight-shape", "dd-range", "dd-bins0", "dd-bin-count", "dd-bin-tensors"])
def test_errors_word_for_word(case):
    cpu_e, dev_e = errors_alike(case)
    assert str(cpu_e).split("\n")[0] in str(dev_e), (str(cpu_e), str(dev_e))


@pytest.mark.parametrize("dtype", [torch.int64, torch.float16, torch.bfloat16], ids=str)
def test_dtypes_cpu_refuses(dtype):
    errors_alike(lambda d: torch.histogram(torch.ones(4, dtype=dtype, device=d), 3))


@pytest.mark.parametrize("bad", [NAN, INF, -INF])
def test_data_range_not_finite(bad):
    # the range comes from the data: a device-side check, raised as CPU's RuntimeError
    cpu_e, dev_e = errors_alike(lambda d: torch.histogram(torch.tensor([0.0, bad, 1.0], device=d), 3))
    assert "is not finite" in str(dev_e)
    cpu_e, dev_e = errors_alike(lambda d: torch.histogramdd(torch.tensor([[0.0, bad], [1.0, 1.0]], device=d), 2))
    assert "dimension 1's range" in str(dev_e)
