"""TorchTitan on 'tpu' against the same run on CPU (issue #17).

Each case is TorchTitan's own trainer (tools/titan/run.py) under torchrun,
once with --device tpu and once with --device cpu (gloo), both starting from
one seed checkpoint made on CPU (so both have the same initial weights; the
two devices' random generators differ). Reports each step's loss side by
side, the largest difference, and the steady-state step time.

    python tools/titan/compare.py [--cases fsdp,tp,pp,resume] [--steps 20]

Run it with the TorchTitan venv's python (`make titan` does).
"""
import argparse
import json
import os
import re
import shutil
import socket
import subprocess
import sys
import time
from datetime import datetime

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
RUN = os.path.join(ROOT, "tools", "titan", "run.py")

CASES = {
    # name: (processes, extra TorchTitan flags)
    "single": (1, []),
    # torch.compile of the model and loss on 'tpu' against the eager CPU run
    # (Inductor on CPU fails to compile TorchTitan's flex attention in 2.14.1)
    "single_compiled": (1, ["--compile.enable"]),
    "fsdp": (2, ["--parallelism.data_parallel_shard_degree", "2"]),
    "tp": (2, ["--parallelism.tensor_parallel_degree", "2", "--parallelism.data_parallel_shard_degree", "1"]),
    "pp": (2, ["--parallelism.pipeline_parallel_degree", "2", "--parallelism.data_parallel_shard_degree", "1"]),
    # a 2-D mesh: FSDP over 2 x tensor parallel over 2
    "fsdp_tp": (4, ["--parallelism.data_parallel_shard_degree", "2", "--parallelism.tensor_parallel_degree", "2"]),
}
STEP = re.compile(r"^\[titan\] (\S+ \S+) - root - INFO - .*?step:\s*(\d+).*?loss:\s*([0-9.]+)")
ANSI = re.compile(r"\x1b\[[0-9;]*m")


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def torchrun(device, nproc, flags, dump, assets, timeout=900, steps_expected=True):
    env = dict(os.environ, TORCH_TPU_CPU_DEVICES="1", TTPU_TITAN_ASSETS=assets, PYTHONUNBUFFERED="1")
    cmd = [sys.executable, "-m", "torch.distributed.run", "--nproc_per_node", str(nproc),
           "--master-addr", "127.0.0.1", "--master-port", str(free_port()),
           "--local-ranks-filter", str(nproc - 1),  # the last rank: it holds the loss under pipelining
           RUN, "--device", device, "--module", "tools.titan.config", "--config", "llama3_debug",
           "--dump_folder", dump] + flags
    t0 = time.time()
    p = subprocess.run(cmd, cwd=ROOT, env=env, capture_output=True, text=True, timeout=timeout)
    if p.returncode != 0:
        raise RuntimeError(f"TorchTitan on {device} failed ({' '.join(cmd[3:])}):\n{(p.stdout + p.stderr)[-6000:]}")
    steps = {}
    for line in ANSI.sub("", p.stdout + p.stderr).splitlines():
        m = STEP.match(line)
        if m:
            when = datetime.strptime(m.group(1), "%Y-%m-%d %H:%M:%S,%f").timestamp()
            steps[int(m.group(2))] = (float(m.group(3)), when)
    if steps_expected and not steps:
        raise RuntimeError(f"TorchTitan on {device} logged no step ({' '.join(cmd[3:])}):\n"
                           f"{(p.stdout + p.stderr)[-6000:]}")
    return steps, time.time() - t0


def step_ms(steps, first=5):
    """Mean time per step after the first `first` steps (compilation, warm-up)."""
    ks = sorted(k for k in steps if k >= first)
    if len(ks) < 2:
        return float("nan")
    return 1000 * (steps[ks[-1]][1] - steps[ks[0]][1]) / (ks[-1] - ks[0])


def seed_checkpoint(work, assets):
    dump = os.path.join(work, "seed")
    ckpt = os.path.join(dump, "checkpoint", "step-0")
    if not os.path.isdir(ckpt):
        shutil.rmtree(dump, ignore_errors=True)
        torchrun("cpu", 1, ["--checkpoint.enable", "--checkpoint.create_seed_checkpoint"], dump, assets,
                 steps_expected=False)
    return ckpt


def run_case(name, work, assets, seed, steps):
    nproc, flags = CASES[name]
    flags = flags + ["--checkpoint.enable", "--checkpoint.initial_load_path", seed, "--training.steps", str(steps)]
    out = {}
    for device in ("tpu",) if name == "single_compiled" else ("cpu", "tpu"):
        dump = os.path.join(work, f"{name}-{device}")
        shutil.rmtree(dump, ignore_errors=True)
        out[device], out[device + "_wall_s"] = torchrun(device, nproc, flags, dump, assets)
    return out


def run_resume(work, assets, steps):
    """Stop at step 10 and resume from TorchTitan's DCP checkpoint (FSDP on
    'tpu'): steps 11.. must equal the uninterrupted run's."""
    full = os.path.join(work, "fsdp-tpu")
    if not os.path.isdir(os.path.join(full, "checkpoint", "step-10")):
        raise RuntimeError("the fsdp case must run first (its step-10 checkpoint is resumed)")
    dump = os.path.join(work, "resume-tpu")
    shutil.rmtree(dump, ignore_errors=True)
    os.makedirs(os.path.join(dump, "checkpoint"))
    shutil.copytree(os.path.join(full, "checkpoint", "step-10"), os.path.join(dump, "checkpoint", "step-10"))
    nproc, flags = CASES["fsdp"]
    resumed, _ = torchrun("tpu", nproc, flags + ["--checkpoint.enable", "--training.steps", str(steps)], dump, assets)
    return resumed


def main(argv=None):
    ap = argparse.ArgumentParser()
    ap.add_argument("--cases", default="fsdp,tp,pp,resume")
    ap.add_argument("--steps", type=int, default=20)
    ap.add_argument("--work", default=os.path.join(ROOT, "build", "titan", "runs"))
    ap.add_argument("--assets", default=os.path.join(ROOT, "build", "titan"))
    ap.add_argument("--json", default=None)
    args = ap.parse_args(argv)
    sys.path.insert(0, os.path.join(ROOT, "tools", "titan"))
    import assets as titan_assets
    titan_assets.make(args.assets)
    os.makedirs(args.work, exist_ok=True)
    seed = seed_checkpoint(args.work, args.assets)
    report = {}
    for name in args.cases.split(","):
        if name == "resume":
            resumed = run_resume(args.work, args.assets, args.steps)
            full = report.get("fsdp", {}).get("tpu") or {}
            diffs = [abs(resumed[k][0] - full[k][0]) for k in resumed if k in full]
            report["resume"] = {"steps": sorted(resumed), "max_abs_diff": max(diffs) if diffs else None}
            print(f"resume (fsdp, 'tpu', from step 10): steps {min(resumed)}-{max(resumed)}, "
                  f"largest difference from the uninterrupted run {report['resume']['max_abs_diff']}")
            continue
        r = run_case(name, args.work, args.assets, seed, args.steps)
        if "cpu" not in r:  # compared with the eager CPU run
            eager = report.get("single") or run_case("single", args.work, args.assets, seed, args.steps)
            r["cpu"], r["cpu_wall_s"] = eager["cpu"], eager["cpu_wall_s"]
        report[name] = r
        ks = sorted(r["cpu"])
        diffs = [abs(r["cpu"][k][0] - r["tpu"][k][0]) for k in ks if k in r["tpu"]]
        nproc = CASES[name][0]
        print(f"\n{name} ({nproc} process{'es' if nproc > 1 else ''}): step, loss on cpu, loss on tpu")
        for k in ks:
            print(f"  {k:3d}  {r['cpu'][k][0]:.5f}  {r['tpu'][k].__getitem__(0) if k in r['tpu'] else float('nan'):.5f}")
        print(f"  largest |difference| {max(diffs):.2e}; steady step time cpu {step_ms(r['cpu']):.0f} ms, "
              f"tpu {step_ms(r['tpu']):.0f} ms; wall cpu {r['cpu_wall_s']:.0f} s, tpu {r['tpu_wall_s']:.0f} s")
    if args.json:
        with open(args.json, "w") as f:
            json.dump(report, f, default=str)
    return report


if __name__ == "__main__":
    main()
