"""Errors of the same type as CPU (issue #13, section 2), in every mode.

CPU PyTorch is the oracle: the same call raises the same exception type on
'tpu', with CPU's message; our context is added (as a note) without changing
the type, so a user's `except IndexError` fires on both.
"""
import pytest
import torch

from _helpers import assert_same_error, check, each_eager_mode, make_tensor, tpu_only  # noqa: F401

pytestmark = tpu_only


@pytest.mark.parametrize("fn", [
    lambda t: torch.flip(t, (5,)),
    lambda t: t.sum(7),
    lambda t: t.transpose(0, 9),
    lambda t: t[torch.tensor([0]).to(t.device)][:0][torch.tensor([0]).to(t.device)],  # index into a size-0 dim
], ids=["flip_dim", "sum_dim", "transpose_dim", "index_size0_dim"])
def test_error_type_kept(fn):
    cpu_err, dev_err = assert_same_error(lambda t: fn(t).cpu(), make_tensor((2, 3)))
    assert type(dev_err) is IndexError


def test_lowering_context_is_a_note():
    with pytest.raises(IndexError) as info:
        torch.flip(make_tensor((2, 3)).to("tpu"), (5,))
    # a Python meta function's error carries it as a note, a C++ check's as a line of the message
    assert any("torch_tpu" in n for n in getattr(info.value, "__notes__", [])) or "torch_tpu" in str(info.value)


@pytest.mark.parametrize("op", [torch.copysign, torch.atan2, torch.add, torch.mul, torch.pow, torch.maximum,
                                torch.fmod, torch.hypot, torch.lt])
def test_zero_dim_cpu_tensor_is_a_scalar_operand(op):
    x = make_tensor((3, 4), low=0.5, high=2.0)
    s = torch.tensor(-1.5)  # stays on the CPU: ATen treats it as a scalar
    check(lambda t: op(t, s), x)
    check(lambda t: op(s, t), x)


def test_in_place_write_into_overlapping_view_raises_like_cpu():
    assert_same_error(lambda t: t.expand(4, 3).add_(1), torch.arange(3.0))
    assert_same_error(lambda t: t.expand(4, 3).mul_(torch.ones(4, 3, device=t.device)), torch.arange(3.0))


def test_overlapping_view_allowed_where_cpu_allows_it():
    # CPU lets index_fill_ write through an expanded view; so do we (no false alarm).
    x = torch.zeros(3).to("tpu")
    x.expand(3, 3).index_fill_(1, torch.tensor([0]).to("tpu"), 1.0)
    torch.tpu.synchronize()


# Found by the fuzzer with complex operands (tests/fuzz): XLA:CPU crashed the
# process compiling a complex remainder; CPU refuses these for complex64.
@pytest.mark.parametrize("fn", [
    lambda x: torch.fmod(x, 0.5), lambda x: torch.remainder(x, 2), lambda x: torch.floor(x),
    lambda x: torch.atan2(x, x), lambda x: torch.erf(x), lambda x: torch.sign(x), lambda x: torch.trunc(x),
    lambda x: torch.nansum(x), lambda x: torch.hypot(x, x), lambda x: torch.hypot(x.real, x),
    lambda x: x.clone().trunc_(),
], ids=["fmod", "remainder", "floor", "atan2", "erf", "sign", "trunc", "nansum", "hypot", "hypot_mixed", "trunc_"])
def test_complex_ops_cpu_refuses_raise_not_crash(fn):
    cpu_e, dev_e = assert_same_error(fn, torch.tensor([1 + 2j, 3 - 1j]))
    assert str(cpu_e).split("\n")[0][:40] in str(dev_e)


@pytest.mark.parametrize("fn", [torch.var, torch.std, torch.var_mean, torch.std_mean])
@pytest.mark.parametrize("dtype", [torch.int16, torch.int64, torch.bool])
def test_var_std_of_integers_raise_as_cpu(fn, dtype):
    cpu_e, dev_e = assert_same_error(lambda x: fn(x, 0), torch.tensor([1, 0], dtype=dtype))
    assert str(cpu_e).split(" (")[0] in str(dev_e)


# Found by OpInfo's error inputs (python tools/conformance.py --only-errors):
# the same exception type as CPU and a message matching OpInfo's pattern.
@pytest.mark.parametrize("case", ["logcumsumexp_dim", "uniform_range", "masked_scatter_uint8_mask",
                                  "complex_mixed_parts", "bucketize_2d_boundaries"])
def test_error_inputs_raise_like_cpu(case):
    x = make_tensor((5, 2))
    fns = {
        "logcumsumexp_dim": (lambda t: torch.logcumsumexp(t, 3), "Dimension out of range"),
        "uniform_range": (lambda t: t.clone().uniform_(3, -1), r"uniform_ expects to return a \[from, to\) range"),
        "masked_scatter_uint8_mask": (lambda t: t.masked_scatter((t > 0).to(torch.uint8), t),
                                      "masked_scatter_ only supports boolean masks"),
        "complex_mixed_parts": (lambda t: torch.complex(t, t.double()), "Expected object of scalar type Float"),
        "bucketize_2d_boundaries": (lambda t: torch.bucketize(t, t), "boundaries tensor must be 1 dimension"),
    }
    fn, pattern = fns[case]
    cpu_err, dev_err = assert_same_error(lambda t: fn(t).cpu(), x)
    assert pattern.split("\\")[0] in str(cpu_err).replace("\\", "")
    import re
    assert re.search(pattern, str(dev_err)), str(dev_err)


@pytest.mark.parametrize("case", ["inplace_shifted", "cat_out_overlaps_input", "take_out_overlaps_input",
                                  "kthvalue_out_overlaps_input"])
def test_write_partly_overlapping_an_input_raises_like_cpu(case):
    # CPU refuses a written tensor that shares some (not all) memory with an
    # input: its kernel would read what it already wrote.
    fns = {
        "inplace_shifted": lambda t: t[1:].add_(t[:-1]),
        "cat_out_overlaps_input": lambda t: torch.cat([t[:2], t[1:3]], out=t[:4]),
        "take_out_overlaps_input": lambda t: torch.take(t, torch.tensor([0, 1], device=t.device), out=t[1:3]),
        "kthvalue_out_overlaps_input": lambda t: torch.kthvalue(t, 2, out=(t[:1].squeeze(), torch.empty(
            (), dtype=torch.long, device=t.device))),
    }
    cpu_err, dev_err = assert_same_error(lambda t: fns[case](t.clone()), make_tensor((6,)))
    assert str(cpu_err).splitlines()[0] in str(dev_err)


def test_full_overlap_where_cpu_allows_it():
    x = make_tensor((6,))
    check(lambda t: t.clone().mul_(t), x)
    check(lambda t: (lambda c: torch.add(c, 1, out=c))(t.clone()), x)
    check(lambda t: (lambda c: c.add_(c))(t.clone()), x)


@pytest.mark.parametrize("fn", [torch.argmax, torch.argmin, lambda t: torch.argmax(t, 0)], ids=["argmax", "argmin",
                                                                                                 "argmax_dim"])
@pytest.mark.parametrize("shape", [(), (3,)], ids=["0d", "1d"])
def test_arg_reductions_refuse_complex_like_cpu(fn, shape):
    # found by the fuzzer (seed 100573): a 0-d complex input was accepted
    z = torch.complex(make_tensor(shape), make_tensor(shape))
    cpu_err, dev_err = assert_same_error(lambda t: fn(t).cpu(), z)
    assert str(cpu_err).splitlines()[0] in str(dev_err)


# An out= tensor that is one of the inputs: kernels that assert no overlap
# (take, gather, cat, index_select) refuse it on CPU, elementwise ones accept
# it; learnt from CPU once per op, answered the same every call after.
@pytest.mark.parametrize("fn", [
    lambda x: torch.take(x, torch.tensor([0, 1], device=x.device), out=x),
    lambda x: torch.gather(x, 0, torch.tensor([1, 0, 2, 3], device=x.device), out=x),
    lambda x: torch.cat([x, x], out=x),
    lambda x: torch.index_select(x, 0, torch.tensor([1, 0, 2, 3], device=x.device), out=x),
], ids=["take", "gather", "cat", "index_select"])
def test_out_that_is_an_input_refused_like_cpu(fn):
    for _ in range(2):  # the first call asks CPU, the second uses what it learnt
        _, dev_err = assert_same_error(fn, torch.arange(4.0))
        assert "single memory location" in str(dev_err)


def test_out_that_is_an_input_accepted_like_cpu():
    for _ in range(2):
        check(lambda x: torch.add(x, 1, out=x), torch.arange(4.0))
        check(lambda x: torch.mul(x, x, out=x), torch.arange(4.0))


@pytest.mark.parametrize("fn", [
    lambda p: torch.multinomial(p, 3), lambda p: torch.multinomial(p, 0),
    lambda p: torch.multinomial(p.expand(2, 2, 2), 1), lambda p: torch.multinomial(p.long(), 1),
    # checked before the distribution (a zero row), as CPU orders them
    lambda p: torch.multinomial(p * 0, 1, out=torch.empty(1, device=p.device)),
    lambda p: torch.multinomial(p.new_zeros(2 ** 24 + 1), 1),
], ids=["more_than_categories", "zero_samples", "3d", "integer", "out_not_long", "more_than_2_24_categories"])
def test_multinomial_argument_checks_like_cpu(fn):
    # (too many samples without replacement used to fail compiling the executable)
    _, dev_err = assert_same_error(fn, torch.tensor([1.0, 2.0]))
    assert type(dev_err) is RuntimeError


@pytest.mark.parametrize("p", [1.5, -0.1, float("nan")], ids=["above_1", "below_0", "nan"])
def test_bernoulli_probability_out_of_range_raises_like_cpu(p):
    # (accepted before: p > 1 drew ones, p < 0 zeros)
    assert_same_error(lambda t: torch.bernoulli(t).cpu(), torch.tensor([0.5, p]))
    assert_same_error(lambda t: torch.zeros(2, device=t.device).bernoulli_(t).cpu(), torch.tensor([0.5, p]))


@pytest.mark.parametrize("p", [1.5, -0.1], ids=["above_1", "below_0"])
def test_bernoulli_float_probability_out_of_range_raises_like_cpu(p):
    cpu_err, dev_err = assert_same_error(lambda t: t.bernoulli_(p).cpu(), torch.zeros(3))
    assert str(cpu_err).split("\n")[0] in str(dev_err)


def test_bernoulli_out():
    p = torch.tensor([0.0, 1.0, 1.0, 0.0])  # certain outcomes: the same draw on any generator
    out = torch.empty(4, device="tpu")
    assert torch.bernoulli(p.to("tpu"), out=out) is out
    torch.testing.assert_close(out.cpu(), p)


# An out= that shares a storage with an input without overlapping it, or is an
# empty input: CPU resizes out to the result's shape first, and then they
# overlap (found by OpInfo's error inputs, aligned with CPU's list).
@pytest.mark.parametrize("fn", [
    lambda i: torch.gather(i.clone(), 0, i[1:], out=i[:1]),
    lambda i: (lambda e: torch.cat([e, i.float()], out=e))(torch.zeros(0, device=i.device)),
], ids=["gather_out_grows_into_the_index", "cat_out_is_an_empty_input"])
def test_out_that_overlaps_an_input_once_resized_is_refused_like_cpu(fn):
    cpu_err, dev_err = assert_same_error(fn, torch.tensor([2, 1, 0]))
    assert "single memory location" in str(cpu_err) and "single memory location" in str(dev_err)


def test_out_beside_an_input_in_one_storage_is_accepted_like_cpu():
    def fn(t):
        torch.add(t[:3], 1, out=t[3:])
        return t
    check(fn, make_tensor((6,)))


def test_masked_fill_with_a_complex_value_tensor_into_a_real_tensor_raises_cpus_words():
    cpu_err, dev_err = assert_same_error(
        lambda x: x.masked_fill(torch.tensor(False, device=x.device), torch.tensor(1j, device=x.device)),
        torch.arange(2))
    assert "value cannot be converted to type int64_t without overflow" in str(cpu_err)
    assert "value cannot be converted to type int64_t without overflow" in str(dev_err)


@pytest.mark.parametrize("args", [(3, 0, 0), (-4, 0, 0), (1, 11, 0), (1, -11, 0), (2, 0, 11), (0, 0, -1)],
                         ids=["dim_beyond", "dim_below", "start_beyond", "start_below", "too_long", "negative_length"])
def test_narrow_copy_checks_like_cpus_kernel(args):
    # CPU's kernel: a non-negative dim beyond the rank is a RuntimeError, a negative one an
    # IndexError; start out of range an IndexError; start + length beyond the size a RuntimeError
    cpu_err, dev_err = assert_same_error(lambda t: t.narrow_copy(*args), make_tensor((4, 10, 5)))
    assert str(cpu_err).splitlines()[0].split(" (")[0].strip() in str(dev_err)


def test_narrow_copy_values_like_cpu():
    check(lambda t: t.narrow_copy(1, -3, 2), make_tensor((4, 10, 5)))
    check(lambda t: t.narrow_copy(0, 1, 2), make_tensor((4, 10, 5)).transpose(0, 2))
