"""TorchTitan trains on 'tpu' (issue #17): its llama3 debug model, 20 steps
from one seed checkpoint, under torchrun with 2 processes, as FSDP
(dp_shard 2), tensor parallel (TP 2) and pipeline parallel (PP 2, 1F1B:
each rank runs a different program), against the same runs on CPU over gloo;
then a resume from TorchTitan's step-10 checkpoint must continue exactly.
Runs tools/titan/compare.py with the TorchTitan venv (`make test` passes
TTPU_TITAN_PYTHON; see the Makefile)."""
import json
import os
import subprocess

import pytest

from _helpers import tpu_only

pytestmark = tpu_only

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
PYTHON = os.environ.get("TTPU_TITAN_PYTHON", "")


@pytest.fixture(scope="module")
def report(tmp_path_factory):
    if not PYTHON:
        pytest.skip("TTPU_TITAN_PYTHON is not set: run through `make test` (it builds the TorchTitan venv)")
    work = tmp_path_factory.mktemp("titan")
    out = work / "report.json"
    p = subprocess.run([PYTHON, os.path.join(ROOT, "tools", "titan", "compare.py"), "--cases", "fsdp,tp,pp,resume",
                        "--work", str(work / "runs"), "--assets", str(work / "assets"), "--json", str(out)],
                       cwd=ROOT, capture_output=True, text=True, timeout=1500)
    assert p.returncode == 0, (p.stdout + p.stderr)[-6000:]
    return json.loads(out.read_text())


@pytest.mark.parametrize("case", ["fsdp", "tp", "pp"])
def test_loss_curve_matches_cpu(report, case):
    cpu = {int(k): v[0] for k, v in report[case]["cpu"].items()}
    tpu = {int(k): v[0] for k, v in report[case]["tpu"].items()}
    assert sorted(tpu) == list(range(1, 21)) and sorted(cpu) == sorted(tpu)
    for k in cpu:
        assert abs(cpu[k] - tpu[k]) <= 5e-3 * max(1.0, abs(cpu[k])), (case, k, cpu[k], tpu[k])
    assert tpu[20] < tpu[1] - 3  # it learns (8.2 -> about 2.4)


def test_resume_from_checkpoint_continues_exactly(report):
    r = report["resume"]
    assert r["steps"] == list(range(11, 21))
    assert r["max_abs_diff"] is not None and r["max_abs_diff"] <= 1e-4
