"""Differential fuzzer (issue #13, section 4): random programs, CPU is the oracle.

The programs, the op table and the minimiser live in tests/fuzz/. CI runs a
fixed set of seeds in every eager mode and a smaller one compiled; ``-m slow``
runs many more, and ``make fuzz N=5000`` runs a long sweep with a summary per
mode. A failure prints the program and a minimised standalone repro; one seed
replays alone with

    TTPU_FUZZ_SEEDS=1234 TTPU_FUZZ_MODE=strict pytest tests/test_fuzz.py -k replay
"""
import os

import pytest
import torch

from fuzz import programs
from fuzz.ops import DTYPES

EAGER = ("strict", "debug", "defer")


def check(seed, mode):
    prog = programs.draw(seed)
    m = programs.run(prog, mode)
    if m is not None and not m.excused:
        pytest.fail(programs.report(prog, m), pytrace=False)


@pytest.mark.parametrize("mode", EAGER)
@pytest.mark.parametrize("seed", range(60))
def test_fuzz(seed, mode):
    check(seed, mode)


@pytest.mark.parametrize("seed", range(12))
def test_fuzz_compiled(seed):
    check(seed, "compiled")


@pytest.mark.slow
@pytest.mark.parametrize("mode", programs.MODES)
@pytest.mark.parametrize("seed", range(1000, 3000))
def test_fuzz_many(seed, mode):
    check(seed, mode)


@pytest.mark.skipif("TTPU_FUZZ_SEEDS" not in os.environ, reason="replays TTPU_FUZZ_SEEDS=1,2,...")
def test_fuzz_replay():
    for seed in os.environ["TTPU_FUZZ_SEEDS"].split(","):
        check(int(seed), os.environ.get("TTPU_FUZZ_MODE", "strict"))


# The fuzzer itself: what it draws and how it reduces a failure.

def test_programs_cover_the_dtypes_and_op_kinds():
    progs = [programs.draw(s) for s in range(300)]
    seen = {t.dtype for p in progs for t in p.inputs}
    assert set(DTYPES) <= seen
    codes = " ".join(s.code for p in progs for s in p.steps)
    for needle in ("out=", ".add_(", "torch.view_as_real", "x.transpose(", "torch.tensor(["):
        assert needle in codes
    assert any(s.err for p in progs for s in p.steps)  # CPU's refusals are part of the contract


def test_minimiser_keeps_the_failing_dependency_chain():
    prog = programs.draw(7)
    k = len(prog.steps) - 1
    while prog.steps[k].err is not None:
        k -= 1
    sliced = programs.dependency_slice(prog, k)
    assert sliced.steps[-1].code == prog.steps[k].code
    assert len(sliced.steps) <= k + 1
    # The slice replays on CPU to the same value as the whole program.
    values = list(sliced.inputs)
    for s in sliced.steps:
        if s.err is None:
            values.append(programs.first(s.fn()(*(values[a] for a in s.args))))
    torch.testing.assert_close(values[-1], programs.first(prog.cpu_outs[k]), equal_nan=True)


def test_repro_is_a_runnable_script(capsys):
    prog = programs.draw(3)
    src = programs.repro(programs.dependency_slice(prog, len(prog.steps) - 1), "strict")
    exec(compile(src, "<repro>", "exec"), {})  # noqa: S102  (runs on CPU and on 'tpu', prints both)
    assert capsys.readouterr().out


def test_amplified_rounding_is_told_from_a_wrong_step():
    # fmod is discontinuous: an operand one ulp off CPU's (an upstream expm1
    # rounded differently) moves the result by a whole step. That alone is not
    # a mismatch; an operand beyond tolerance, or exact operands, are.
    x = torch.tensor([442413.4, 1.9e21, 3.3], dtype=torch.float32)
    prog = programs.Program(0, [x])
    prog.steps.append(programs.Step("fmod", "torch.fmod(x, 1.1)", (0,), None))
    prog.cpu_outs.append(torch.fmod(x, 1.1))
    one_ulp = torch.nextafter(x, torch.full_like(x, float("inf")))
    m = programs.amplification(prog, 0, [one_ulp.to("tpu")], "strict", "tpu", [False])
    assert m is not None and m.excused == "amplified rounding"
    assert programs.amplification(prog, 0, [(x * 1.01).to("tpu")], "strict", "tpu", [False]) is None
    assert programs.amplification(prog, 0, [x.to("tpu")], "strict", "tpu", [False]) is None


def test_flushed_denormal_is_told_from_a_wrong_step():
    # XLA:CPU flushes denormals: rsqrt(9e-41) is inf there, 1e20 on CPU.
    x = torch.tensor([9.18e-41, 4.0], dtype=torch.float32)
    prog = programs.Program(0, [x])
    prog.steps.append(programs.Step("rsqrt", "torch.rsqrt(x)", (0,), None))
    prog.cpu_outs.append(torch.rsqrt(x))
    m = programs.flushed_denormal(prog, 0, torch.tensor([float("inf"), 0.5]), [False])
    assert m is not None and m.excused == "flushed denormal"
    assert programs.flushed_denormal(prog, 0, torch.tensor([float("inf"), 0.6]), [False]) is None
    normal = programs.Program(0, [torch.tensor([2.0])])
    normal.steps.append(programs.Step("rsqrt", "torch.rsqrt(x)", (0,), None))
    normal.cpu_outs.append(torch.rsqrt(normal.inputs[0]))
    assert programs.flushed_denormal(normal, 0, torch.tensor([0.5]), [False]) is None


def test_programs_stay_small():
    """Seed 101514 drew an outer product of two large values (4096 x 262144
    complex, 8.6 GB on CPU) and the sweep was killed by the OOM killer; such
    a step is drawn again."""
    from fuzz.ops import OUTER_LIMIT
    prog = programs.draw(101514)
    sizes = [o.numel() for o in prog.cpu_outs if isinstance(o, torch.Tensor)]
    assert max(sizes) <= 2 * OUTER_LIMIT, sizes
