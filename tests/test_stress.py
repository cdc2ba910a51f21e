"""Run-to-run determinism of training (issue #13, item 0).

A small GPT trains for a few AdamW steps in every execution mode, each run in a
fresh process (as a user runs a script), some while a second process keeps a
core busy. Every run of a mode must produce bit-identical gradients and
parameters, and the gradients must match the CPU run. A buffer read after
reuse or donation, or an ordering race between executions, shows up here as
a digest that differs between runs or a gradient far from CPU's.
"""
import json
import os
import subprocess
import sys

import pytest

from _helpers import tpu_only

pytestmark = tpu_only

CHILD = os.path.join(os.path.dirname(__file__), "stress", "train_repeat.py")
MODES = "strict,debug,defer,compiled"


def run_child(steps, busy):
    hog = None
    if busy:  # a second process spinning on the host's cores while we train
        hog = subprocess.Popen([sys.executable, "-c", "import time\nt=time.time()\nwhile time.time()-t<300: pass"])
    try:
        out = subprocess.run([sys.executable, CHILD, MODES, str(steps)], capture_output=True, text=True,
                             timeout=600)
    finally:
        if hog:
            hog.kill()
            hog.wait(timeout=30)
    assert out.returncode == 0, out.stderr[-3000:]
    return {r["mode"]: r for r in map(json.loads, (l for l in out.stdout.splitlines() if l.startswith("{")))}


def check_runs(runs):
    first = runs[0]
    assert set(first) == set(MODES.split(","))
    for mode, r in first.items():
        assert r["max_rel_grad_diff_vs_cpu"] < 1e-3, (mode, r)
        assert r["max_param_diff_vs_cpu"] < 1e-3, (mode, r)
        for other in runs[1:]:
            o = other[mode]
            assert (o["grads"], o["params"], o["losses"]) == (r["grads"], r["params"], r["losses"]), (mode, r, o)


def test_training_is_bit_identical_run_to_run_and_under_load():
    check_runs([run_child(3, busy=False), run_child(3, busy=True)])


@pytest.mark.slow
def test_training_is_bit_identical_over_many_runs():
    check_runs([run_child(16, busy=i % 2 == 1) for i in range(10)])
