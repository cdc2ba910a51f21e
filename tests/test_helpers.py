"""Self-tests of the comparison helpers: they must be able to fail.

These run on both TTPU_TEST_DEVICE settings and make sure that an oracle
comparison is never vacuous.
"""

import pytest
import torch

from _helpers import DEV, assert_same, check, check_scenario, make_tensor


def _differs_on_second_call(delta):
    """A function whose second call (the DEV run) is perturbed by ``delta``."""
    calls = []

    def fn(t):
        calls.append(1)
        return t * 2 + (delta if len(calls) == 2 else 0)
    return fn


def test_check_detects_value_mismatch():
    x = make_tensor((3, 4))
    check(_differs_on_second_call(0.0), x)
    with pytest.raises(AssertionError):
        check(_differs_on_second_call(1e-3), x)


def test_check_detects_gradient_mismatch():
    x = make_tensor((3,), requires_grad=True)
    calls = []

    def fn(t):
        calls.append(1)
        # same forward values, different gradient on the second call
        return t * 2 if len(calls) == 1 else t * 3 - t.detach()
    with pytest.raises(AssertionError):
        check(fn, x)


def test_assert_same_detects_dtype_shape_and_structure():
    a = torch.ones(2, 3)
    with pytest.raises(AssertionError):
        assert_same(a.to(DEV, torch.float64), a)
    with pytest.raises(AssertionError):
        assert_same(a.to(DEV).view(3, 2), a)
    with pytest.raises(AssertionError):
        assert_same([a.to(DEV)], [a, a])
    with pytest.raises(AssertionError):
        assert_same([a.to(DEV), 1], [a, 2])  # e.g. version counters
    with pytest.raises(AssertionError):
        assert_same(1, 1.0)  # python int vs float (e.g. .item())


def test_check_scenario_detects_mismatch():
    calls = []

    def scenario(device):
        calls.append(device)
        x = torch.arange(4, device=device)
        if len(calls) == 2:
            x.add_(1)
        return x, x._version
    with pytest.raises(AssertionError):
        check_scenario(scenario)
