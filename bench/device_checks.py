"""Cost of the device-side index checks (issue #13): the small-GPT and MLP
training steps (embedding, cross-entropy targets: three checked ops per
step) with the checks compiled in and left out (TORCH_TPU_DEVICE_CHECKS=0).
The variable is read once per process, so each variant runs in its own child
process; the children alternate, three times each, and the ratio is the
median of the per-pair ratios of their median step times.

    python bench/device_checks.py
"""
import json
import os
import statistics
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
MODES = ("strict", "defer", "compiled")


def child():
    import torch
    import torch_tpu  # noqa: F401
    from torch_tpu.execution_mode import EagerMode, eager_mode
    sys.path.insert(0, HERE)
    import models
    out = {}
    for name, make in (("small-GPT", models.gpt_step), ("MLP", models.mlp_step)):
        for mode in MODES:
            with eager_mode(EagerMode.DEFER_AND_FUSE if mode == "defer" else EagerMode.STRICT):
                torch.manual_seed(0)
                step, _ = make("tpu")
                if mode == "compiled":
                    step = torch.compile(step, backend="tpu")
                for _ in range(4):
                    step()
                torch.tpu.synchronize()
                times = []
                for _ in range(15):
                    t = time.perf_counter()
                    for _ in range(3):
                        step()
                    torch.tpu.synchronize()
                    times.append((time.perf_counter() - t) / 3 * 1e3)
            out[f"{name} {mode}"] = statistics.median(times)
    print(json.dumps(out))


def run(checks):
    env = dict(os.environ, TORCH_TPU_DEVICE_CHECKS="1" if checks else "0")
    r = subprocess.run([sys.executable, __file__, "--child"], env=env, capture_output=True, text=True, timeout=900)
    if r.returncode != 0:
        raise SystemExit(r.stderr[-2000:])
    return json.loads(r.stdout.strip().splitlines()[-1])


def main():
    pairs = []
    for i in range(3):
        on, off = (run(True), run(False)) if i % 2 == 0 else (run(False), run(True))[::-1]
        pairs.append((on, off))
    print(f"{'step':<22} {'checks on ms':>12} {'off ms':>8} {'on/off':>7}")
    for key in pairs[0][0]:
        on = statistics.median(p[0][key] for p in pairs)
        off = statistics.median(p[1][key] for p in pairs)
        ratio = statistics.median(p[0][key] / p[1][key] for p in pairs)
        print(f"{key:<22} {on:12.2f} {off:8.2f} {ratio:7.3f}")


if __name__ == "__main__":
    child() if "--child" in sys.argv else main()
