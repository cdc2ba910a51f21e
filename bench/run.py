"""torch_tpu benchmark suite: every case on native PyTorch CPU and on 'tpu' in
each available mode.

    python bench/run.py [--quick] [--out bench/results/latest.json]

Native PyTorch (eager and Inductor) runs in processes of its own that never
load torch_tpu, with PyTorch's default settings, as a user runs it: one before
and one after the 'tpu' process, and its time is the mean of the two (both are
kept, so drift on this noisy machine shows). The 'tpu' modes run in this
process with no environment variable a user would not set.

Writes one JSON record per case (name, mode, platform, median and spread over
repeats in ms, compile count, peak device memory), a PNG chart next to it,
and prints a table. Speed is reported here, never asserted in tests.
"""
from __future__ import annotations

import argparse
import contextlib
import datetime
import json
import os

import platform
import statistics
import subprocess
import sys
import time

import torch
import torch.nn as nn
import torch.nn.functional as F

# "native": the baseline process (native CPU eager and Inductor; torch_tpu is
# never imported); "tpu": our modes (this process when run by a user).
SIDE = os.environ.get("TORCH_TPU_BENCH_SIDE", "tpu")
if SIDE == "tpu":
    import torch_tpu  # noqa: F401
    from torch_tpu.execution_mode import EagerMode, eager_mode

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import models  # noqa: E402
from timing import measure, sync  # noqa: E402

# The eager modes on 'tpu'; each case runs on CPU and then in every one of them.
TPU_MODES = ["strict", "debug", "defer"]
EAGER_MODES = {"strict": EagerMode.STRICT, "debug": EagerMode.DEBUG, "defer": EagerMode.DEFER_AND_FUSE} \
    if SIDE == "tpu" else {}
ALL_MODES = TPU_MODES + ["compiled", "inductor"]  # columns of the table


SELECTED = set(ALL_MODES)  # --modes narrows this (native CPU always runs: it is the reference)


def targets(modes=None):
    """(mode, device) pairs of this process's side: native CPU, or 'tpu' in each selected mode."""
    if SIDE == "native":
        return [("cpu", "cpu")]
    return [(m, "tpu") for m in (modes or TPU_MODES) if m in SELECTED]


def in_mode(mode):
    if SIDE == "native":
        return contextlib.nullcontext()
    return eager_mode(EAGER_MODES.get(mode, EagerMode.STRICT))


class DeviceStats:
    """torch.tpu's counters, read around each measured case."""

    def compiles(self):
        return torch.tpu.compile_stats()["compiles"]

    def peak_bytes(self):
        return torch.tpu.max_memory_allocated()

    def reset_peak(self):
        torch.tpu.reset_peak_memory_stats()

    def executables(self):
        """Executables the process needed anew: compiled, or loaded from the disk cache."""
        return torch.tpu.compile_stats()["cache_misses"]


class NoStats:
    """The native process has no device counters: every one reads 0."""

    def compiles(self):
        return 0

    def peak_bytes(self):
        return 0

    def reset_peak(self):
        pass

    def executables(self):
        return 0


STATS = DeviceStats() if SIDE == "tpu" else NoStats()


class Recorder:
    def __init__(self, quick, inductor=False):
        self.quick = quick
        self.inductor = inductor
        self.records = []
        self.platform = torch_tpu._C._plugin_info()["platform_name"] if SIDE == "tpu" else "cpu-native"

    def run(self, name, mode, device, fn, repeats, inner, note=""):
        print(f"  {name:<28} {mode:<7}", end="", flush=True)
        STATS.reset_peak()
        before = STATS.compiles()
        try:
            med, lo, hi = measure(fn, device, repeats, inner)
            err = None
        except Exception as e:  # a case the backend cannot run yet is reported, not hidden
            med = lo = hi = None
            err = f"{type(e).__name__}: {str(e).splitlines()[0][:160]}"
        compiles = STATS.compiles() - before
        rec = {
            "name": name, "mode": mode, "platform": "cpu-native" if mode == "cpu" else self.platform,
            "median_ms": med, "min_ms": lo, "max_ms": hi, "repeats": repeats, "inner": inner,
            "compiles": compiles if mode != "cpu" else 0,
            "peak_device_bytes": STATS.peak_bytes() if mode != "cpu" else 0,
            "note": note, "error": err,
        }
        self.records.append(rec)
        print(f" {med:10.4f} ms" if med is not None else f" ERROR {err}", flush=True)
        return rec


def case_dispatch(r: Recorder):
    reps, inner = (5, 200) if r.quick else (9, 1000)
    # In defer mode a result nobody keeps is never computed: the tiny cases
    # there measure recording cost; the kept in-place result is computed.
    for mode, dev in targets():
        a = torch.randn(16, 16, device=dev)
        b = torch.randn(16, 16, device=dev)
        v = a[2:10]
        at = a.t()  # a non-contiguous input: the result takes CPU's (transposed) strides
        with in_mode(mode):
            r.run("tiny add 16x16", mode, dev, lambda: a + b, reps, inner)
            r.run("tiny add transposed", mode, dev, lambda: at + b, reps, inner)
            r.run("tiny mul scalar", mode, dev, lambda: a * 1.5, reps, inner)
            r.run("view + in-place mul_", mode, dev, lambda: v.mul_(1.0), reps, inner)
    for mode, dev in targets():
        x = torch.randn(1024, 1024, device=dev)
        y = torch.randn(1024, 1024, device=dev)
        s = torch.randn(64, 4096, device=dev)
        out = torch.empty(1024, 1024, device=dev)
        sm = torch.empty(64, 4096, device=dev)
        # defer would skip results overwritten before anyone reads them, so
        # there each op is followed by a sync: a one-op graph per call
        flush = torch_tpu.sync if mode == "defer" else (lambda: None)
        with in_mode(mode):
            r.run("matmul 1024x1024", mode, dev, lambda: (torch.matmul(x, y, out=out), flush()), reps,
                  5 if r.quick else 10)
            r.run("softmax 64x4096", mode, dev, lambda: (torch.softmax(s, -1, out=sm), flush()), reps,
                  20 if r.quick else 50)


def case_compile(r: Recorder):
    if SIDE != "tpu":
        return
    # A new op signature each call: compile + run latency of a small op.
    reps = 3 if r.quick else 5
    fresh = iter([torch.ones(100 + i, 3, device="tpu") for i in range(reps + 2)])
    torch.tpu.synchronize()

    def new_op():
        x = next(fresh)
        x * 2.5

    r.run("compile new small op", "strict", "tpu", new_op, reps, 1,
          note="first call of a new op signature (mul by a scalar): build text + compile + run")


def training_case(r: Recorder, name, make, steps_inner, inductor=False):
    """One training step on every contender, measured interleaved: each round
    times `steps_inner` steps of every contender in turn (the order reversed
    every other round), so a slow phase of this noisy machine hits all of them
    alike. The reported ratio to CPU is the median of the per-round ratios."""
    rounds = 9 if r.quick else 21
    contenders = []
    compiled = [("compiled", "tpu")] if SIDE == "tpu" else ([("inductor", "cpu")] if inductor else [])
    for mode, dev in targets() + [(m, d) for m, d in compiled if m in SELECTED]:
        with in_mode(mode):
            step = prepare_training(r, name, make, mode, dev)
        if step is not None:
            contenders.append((mode, dev, step))
    samples = {mode: [] for mode, _, _ in contenders}
    for i in range(rounds):
        for mode, dev, step in (contenders if i % 2 == 0 else contenders[::-1]):
            with in_mode(mode):
                sync(dev)
                t = time.perf_counter()
                for _ in range(steps_inner):
                    step()
                sync(dev)
            samples[mode].append((time.perf_counter() - t) / steps_inner * 1e3)
    cpu = samples.get("cpu")
    for mode, dev, _ in contenders:
        s = samples[mode]
        rec = {"name": name, "mode": mode, "platform": "cpu-native" if dev == "cpu" else r.platform,
               "median_ms": statistics.median(s), "min_ms": min(s), "max_ms": max(s), "repeats": rounds,
               "inner": steps_inner, "compiles": 0, "peak_device_bytes": 0, "note": "interleaved rounds",
               "error": None}
        if cpu and mode != "cpu":
            ratios = sorted(a / b for a, b in zip(s, cpu))
            rec["ratio_vs_cpu"] = statistics.median(ratios)
            q = len(ratios) // 4
            rec["ratio_iqr"] = [ratios[q], ratios[-1 - q]]
        r.records.append(rec)
        ratio = f"  x{rec['ratio_vs_cpu']:.2f} cpu (IQR {rec['ratio_iqr'][0]:.2f}-{rec['ratio_iqr'][1]:.2f})" \
            if "ratio_vs_cpu" in rec else ""
        print(f"  {name:<28} {mode:<9} {rec['median_ms']:10.4f} ms{ratio}", flush=True)


def prepare_training(r, name, make, mode, dev):
    """Builds the step for one contender and runs its first (cold) step and a
    warm-up; returns the step, or None when it cannot run (reported)."""
    torch.manual_seed(0)
    step, _ = make(dev)
    if mode in ("compiled", "inductor"):
        # the whole step (forward, backward, optimizer) under torch.compile;
        # backward() is a graph break, so it runs as several graphs
        step = torch.compile(step, backend="tpu" if mode == "compiled" else "inductor")
    before = STATS.compiles()
    STATS.reset_peak()
    first = {"name": name + " (first step)", "mode": mode, "platform": "cpu-native" if dev == "cpu" else r.platform,
             "repeats": 1, "inner": 1, "error": None,
             "note": "inductor compile" if mode == "inductor" else "cold: includes compiling every op"}
    t = time.perf_counter()
    try:
        step()
        sync(dev)
        first_ms = (time.perf_counter() - t) * 1e3
        for _ in range(3):
            step()
        sync(dev)
    except Exception as e:  # a case the backend cannot run yet is reported, not hidden
        first["error"] = f"{type(e).__name__}: {str(e).splitlines()[0][:160]}"
        first_ms = None
    if dev != "cpu" or mode == "inductor":
        first.update(median_ms=first_ms, min_ms=first_ms, max_ms=first_ms,
                     compiles=STATS.compiles() - before if dev != "cpu" else 0,
                     peak_device_bytes=STATS.peak_bytes() if dev != "cpu" else 0)
        r.records.append(first)
    if first["error"]:
        r.records.append(dict(first, name=name, median_ms=None, min_ms=None, max_ms=None))
        print(f"  {name:<28} {mode:<9} ERROR {first['error']}", flush=True)
        return None
    return step


def case_training(r: Recorder):
    torch._dynamo.reset()
    training_case(r, "MLP train step", models.mlp_step, 5 if r.quick else 10, inductor=r.inductor)
    training_case(r, "small-GPT train step", models.gpt_step, 2 if r.quick else 4, inductor=r.inductor)
    training_case(r, "CNN train step", models.cnn_step, 2 if r.quick else 4)


def case_generation(r: Recorder):
    reps = 3 if r.quick else 5
    for mode, dev in targets():
        gen = models.gpt_generate(dev, new_tokens=8 if r.quick else 32)
        with in_mode(mode):
            rec = r.run("small-GPT generate", mode, dev, gen, reps, 1,
                        note="ms for the whole generation; tokens/s in 'tokens_per_s'")
        if rec["median_ms"]:
            rec["tokens_per_s"] = (8 if r.quick else 32) / (rec["median_ms"] / 1e3)


def case_hf_generate(r: Recorder):
    """#19 section 2: HF `generate()` on a tiny Llama, greedy, 64 new tokens
    (ms for the whole generation). Eager modes use HF's default dynamic KV
    cache; 'compiled' is the static cache with torch.compile(model.forward,
    backend="tpu") (native: Inductor). After the measured runs, prompts of
    three other lengths are generated: `new_prompt_compiles` counts the
    executables they compile (goal: a fixed number, whatever the length)."""
    reps = 3 if r.quick else 5
    name = "HF Llama generate 64 tokens"
    cases = [(mode, dev, False, None) for mode, dev in targets()]
    if SIDE == "native" and r.inductor:
        cases.append(("inductor", "cpu", True, "inductor"))
    if SIDE == "tpu" and "compiled" in SELECTED:
        cases.append(("compiled", "tpu", True, "tpu"))
    for mode, dev, static, backend in cases:
        torch._dynamo.reset()
        gen, prompt_of = models.hf_llama_generate(dev, static=static, compiled=backend)
        with in_mode(mode):
            before, before_exe = STATS.compiles(), STATS.executables()
            t0 = time.perf_counter()
            gen()
            first_ms = (time.perf_counter() - t0) * 1e3
            first, first_exe = STATS.compiles() - before, STATS.executables() - before_exe
            rec = r.run(name, mode, dev, gen, reps, 1, note="static KV cache" if static else "dynamic KV cache")
            before, before_exe = STATS.compiles(), STATS.executables()
            for length in (5, 11, 17):
                gen(prompt_of(length))
            rec.update(first_call_ms=first_ms, first_call_compiles=first, first_call_executables=first_exe,
                       new_prompt_compiles=STATS.compiles() - before,
                       new_prompt_executables=STATS.executables() - before_exe)
        if rec["median_ms"]:
            rec["tokens_per_s"] = 64 / (rec["median_ms"] / 1e3)
        if SIDE == "tpu":
            print(f"    first call {first_ms:.0f} ms: {first_exe} executables ({first} compiled, the rest from "
                  f"the disk cache); 3 new prompt lengths: {rec['new_prompt_executables']} more "
                  f"({rec['new_prompt_compiles']} compiled)", flush=True)


def case_gemm(r: Recorder):
    n = 1024 if r.quick else 2048
    flops = 2 * n ** 3
    res = {}
    for mode, dev in targets(["strict"]):
        x = torch.randn(n, n, device=dev)
        y = torch.randn(n, n, device=dev)
        rec = r.run(f"GEMM {n}^3 f32", mode, dev, lambda: x @ y, 3 if r.quick else 5, 3)
        if rec["median_ms"]:
            rec["gflops"] = flops / (rec["median_ms"] / 1e3) / 1e9
            res[mode] = rec
    if "cpu" in res:
        for mode, rec in res.items():
            rec["mfu_vs_cpu_peak"] = rec["gflops"] / res["cpu"]["gflops"]


WARM_CODE = """
import sys, time
t0 = time.perf_counter()
import torch, torch_tpu
sys.path.insert(0, {here!r})
import models
torch.manual_seed(0)
step, _ = models.mlp_step("tpu")
t1 = time.perf_counter()
step().item()
t2 = time.perf_counter()
print((t2 - t0) * 1e3, (t2 - t1) * 1e3, torch.tpu.compile_stats()["compiles"])
"""


def case_warm_start(r: Recorder):
    """A new process runs one MLP training step: with an empty compilation
    cache directory (cold) and again with the directory it filled (warm)."""
    if SIDE != "tpu":
        return
    import tempfile
    code = WARM_CODE.format(here=HERE)
    with tempfile.TemporaryDirectory() as cache:
        env = dict(os.environ, TORCH_TPU_CACHE_DIR=cache)
        for label in ("cold cache", "warm cache"):
            runs = []
            for i in range(2 if r.quick else 3):
                if label == "cold cache":
                    for f in os.listdir(cache):
                        os.remove(os.path.join(cache, f))
                out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300,
                                     env=env)
                total, first, compiles = out.stdout.strip().splitlines()[-1].split()
                runs.append((float(total), float(first), int(compiles)))
            for idx, what in ((0, "process start to first step"), (1, "first step only")):
                times = [x[idx] for x in runs]
                name = f"{what} ({label})"
                r.records.append({"name": name, "mode": "strict", "platform": r.platform,
                                  "median_ms": statistics.median(times), "min_ms": min(times),
                                  "max_ms": max(times), "repeats": len(times), "inner": 1,
                                  "compiles": runs[-1][2], "peak_device_bytes": None,
                                  "note": "MLP training step in a fresh process; includes import for the first",
                                  "error": None})
                print(f"  {name:<40} strict  {statistics.median(times):10.4f} ms  compiles {runs[-1][2]}")


def table(records):
    rows = []
    by = {}
    for rec in records:
        by.setdefault(rec["name"], {})[rec["mode"]] = rec
    header = f"{'case':<32} {'cpu ms':>10} " + " ".join(f"{m + ' ms':>12} {m + '/cpu':>9}" for m in ALL_MODES)
    rows.append(header)
    for name, modes in by.items():
        cpu = modes.get("cpu", {}).get("median_ms")
        line = f"{name:<32} {cpu if cpu is not None else float('nan'):>10.4f} "
        for m in ALL_MODES:
            t = modes.get(m, {}).get("median_ms")
            ratio = modes.get(m, {}).get("ratio_vs_cpu") or (t / cpu if (t and cpu) else None)
            line += f"{t if t is not None else float('nan'):>12.4f} {ratio if ratio else float('nan'):>9.2f} "
        rows.append(line)
    return "\n".join(rows)


def chart(records, path):
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        print("(matplotlib not installed: no chart)")
        return
    names, ratios = [], []
    for rec in records:
        if rec["mode"] == "cpu" or rec["median_ms"] is None:
            continue
        cpu = next((c for c in records if c["name"] == rec["name"] and c["mode"] == "cpu"), None)
        if cpu and cpu["median_ms"]:
            names.append(f"{rec['name']} [{rec['mode']}]")
            ratios.append(rec.get("ratio_vs_cpu") or rec["median_ms"] / cpu["median_ms"])
    fig, ax = plt.subplots(figsize=(9, 0.4 * len(names) + 1.5))
    ax.barh(names, ratios, color=["tab:green" if x <= 1 else "tab:red" for x in ratios])
    ax.axvline(1.0, color="black", lw=1)
    ax.set_xscale("log")
    ax.set_xlabel("time relative to native PyTorch CPU (lower is better)")
    ax.invert_yaxis()
    fig.tight_layout()
    fig.savefig(path, dpi=110)


def case_mixed(r: Recorder):
    """#19 section 3: a process that also runs CPU PyTorch work. The MLP step on
    'tpu' alone, the CPU work alone (three 256x256 matmul + softmax, which run
    on PyTorch's OpenMP threads) and both in one loop; `mixed_ratio` is the
    loop's time over the sum of the two alone (1.0: they do not slow each
    other; the goal is <= 1.2 with no environment variable set)."""
    if SIDE != "tpu":
        return
    reps, inner = (5, 10) if r.quick else (9, 20)
    cpu_a = torch.randn(256, 256)

    def cpu_work():
        for _ in range(3):
            torch.softmax(cpu_a @ cpu_a, -1).sum()
    for mode, dev in targets(["strict", "defer"]):
        torch.manual_seed(0)
        step, _ = models.mlp_step(dev)
        with in_mode(mode):
            step()
            alone = r.run("mixed: MLP step alone", mode, dev, step, reps, inner)
            cpu = r.run("mixed: CPU work alone", mode, "cpu", cpu_work, reps, inner)
            both = r.run("mixed: MLP step + CPU work", mode, dev, lambda: (step(), cpu_work()), reps, inner)
        if alone["median_ms"] and cpu["median_ms"] and both["median_ms"]:
            both["mixed_ratio"] = both["median_ms"] / (alone["median_ms"] + cpu["median_ms"])
            print(f"  mixed ratio ({mode}): {both['mixed_ratio']:.2f} of the two alone", flush=True)


def case_lowp(r: Recorder):
    """#18: block-scaled matmuls (MXFP4, NVFP4: 4-bit operands and their
    scales, dequantised and multiplied in one call) and a float8 per-tensor
    _scaled_mm beside a bf16 matmul of the same size. Native CPU has no kernel
    for block scales: its time for those is the dequantise-then-matmul a CPU
    user would write (decode, scale, f32 matmul)."""
    from torch.nn.functional import ScalingType, SwizzleType, scaled_mm
    n = 512 if r.quick else 1024
    reps, inner = (5, 3) if r.quick else (7, 5)
    g = torch.Generator().manual_seed(0)
    a_bytes = torch.randint(0, 256, (n, n // 2), dtype=torch.uint8, generator=g)
    b_bytes = torch.randint(0, 256, (n, n // 2), dtype=torch.uint8, generator=g)
    e8 = torch.randint(120, 134, (n, n // 32), dtype=torch.uint8, generator=g)
    e4m3 = (torch.rand(n, n // 16, generator=g) + 0.5).to(torch.float8_e4m3fn)
    lut = torch.tensor([0, .5, 1, 1.5, 2, 3, 4, 6, -0., -.5, -1, -1.5, -2, -3, -4, -6])
    x16, w16 = torch.randn(n, n, generator=g).bfloat16(), torch.randn(n, n, generator=g).bfloat16()
    f8a, f8b = torch.randn(n, n, generator=g).to(torch.float8_e4m3fn), torch.randn(n, n, generator=g).to(torch.float8_e4m3fn)
    one = torch.tensor(1.0)

    def dequant(packed, scales, block):  # CPU: what a user writes without a kernel
        v = lut[torch.stack([packed & 15, packed >> 4], -1).reshape(packed.shape[0], -1).long()]
        s = torch.exp2(scales.float() - 127) if scales.dtype == torch.uint8 else scales.float()
        return v * s.repeat_interleave(block, 1)
    for mode, dev in targets(["strict"]):
        if dev == "cpu":
            cases = {
                "MXFP4 scaled_mm": lambda: dequant(a_bytes, e8, 32) @ dequant(b_bytes, e8, 32).t(),
                "NVFP4 scaled_mm": lambda: dequant(a_bytes, e4m3, 16) @ dequant(b_bytes, e4m3, 16).t(),
            }
        else:
            A, B = a_bytes.view(torch.float4_e2m1fn_x2).to(dev), b_bytes.view(torch.float4_e2m1fn_x2).to(dev).t()
            S8, S4 = e8.view(torch.float8_e8m0fnu).to(dev), e4m3.to(dev)
            no = SwizzleType.NO_SWIZZLE
            cases = {
                "MXFP4 scaled_mm": lambda: scaled_mm(A, B, S8, ScalingType.BlockWise1x32, S8, ScalingType.BlockWise1x32,
                                                     swizzle_a=no, swizzle_b=no, output_dtype=torch.float32),
                "NVFP4 scaled_mm": lambda: scaled_mm(A, B, S4, ScalingType.BlockWise1x16, S4, ScalingType.BlockWise1x16,
                                                     swizzle_a=no, swizzle_b=no, output_dtype=torch.float32),
            }
        xa, wa, fa, fb, o = (t.to(dev) for t in (x16, w16, f8a, f8b, one))
        cases["bf16 matmul"] = lambda: xa @ wa.t()
        cases["float8 _scaled_mm"] = lambda: torch._scaled_mm(fa, fb.t(), o, o, out_dtype=torch.bfloat16)
        for name, fn in cases.items():
            r.run(f"{name} {n}^3", mode, dev, fn, reps, inner)


def case_dynamic(r: Recorder):
    """#19 section 3, bounded dynamic shapes: one model (TinyGPT forward, no
    gradients) called at every sequence length of a sweep. Native: CPU eager.
    'tpu': torch.compile(dynamic=True) with buckets (powers of two, the
    default) and without (one executable per length). `first_sweep_ms` and
    `first_sweep_compiles` are the first sweep (it compiles what it needs,
    from an emptied executable cache); the median is a warm sweep."""
    lengths = list(range(2, 65, 4 if r.quick else 1))
    reps = 3 if r.quick else 5
    name = f"dynamic: {len(lengths)}-length sweep"

    def sweep_of(model, dev):
        g = torch.Generator().manual_seed(0)
        batches = [torch.randint(0, 256, (2, t), generator=g).to(dev) for t in lengths]

        def sweep():
            with torch.no_grad():
                for x in batches:
                    model(x)
        return sweep
    torch.manual_seed(0)
    if SIDE == "native":
        r.run(name, "cpu", "cpu", sweep_of(models.TinyGPT().eval(), "cpu"), reps, 1)
        return
    if "compiled" not in SELECTED:
        return
    capacity = torch.tpu.compile_stats().get("cache_capacity", 4096)
    for option in ("pow2", "off"):
        torch._dynamo.reset()
        torch.tpu.set_executable_cache_capacity(1)  # the first sweep compiles from nothing
        torch.tpu.set_executable_cache_capacity(capacity)
        model = torch.compile(models.TinyGPT().eval().to("tpu"), backend="tpu", dynamic=True,
                              options={"buckets": option})
        sweep = sweep_of(model, "tpu")
        before = STATS.compiles()
        t0 = time.perf_counter()
        sweep()
        sync("tpu")
        first_ms = (time.perf_counter() - t0) * 1e3
        first_compiles = STATS.compiles() - before
        rec = r.run(name if option == "pow2" else f"{name} (buckets off)", "compiled", "tpu", sweep, reps, 1)
        rec.update(first_sweep_ms=first_ms, first_sweep_compiles=first_compiles)
        print(f"    first sweep: {first_ms:.0f} ms, {first_compiles} executables compiled", flush=True)


GROUPS = {"dispatch": case_dispatch, "compile": case_compile, "training": case_training,
          "generation": case_generation, "hf_generate": case_hf_generate, "gemm": case_gemm,
          "warm_start": case_warm_start, "mixed": case_mixed,
          "lowp": case_lowp, "dynamic": case_dynamic}


def run_native(args, when):
    """The native baseline in a process of its own (no torch_tpu, PyTorch's defaults); its records."""
    import tempfile
    with tempfile.NamedTemporaryFile(suffix=".json", delete=False) as f:
        out = f.name
    cmd = [sys.executable, os.path.abspath(__file__), "--out", out]
    cmd += ["--quick"] if args.quick else []
    cmd += ["--only", args.only] if args.only else []
    cmd += ["--no-inductor"] if args.no_inductor else []
    env = {k: v for k, v in os.environ.items() if k != "OMP_WAIT_POLICY"}
    env["TORCH_TPU_BENCH_SIDE"] = "native"
    env["TORCH_DEVICE_BACKEND_AUTOLOAD"] = "0"  # else `import torch` loads torch_tpu (its entry point)
    print(f"[native baseline, {when}: its own process]", flush=True)
    subprocess.run(cmd, env=env, check=True, timeout=3600)
    with open(out) as f:
        recs = json.load(f)
    os.remove(out)
    return recs


def merge_native(native_runs, ours):
    """Native records (mean of the runs before and after ours, each kept) beside ours, with
    each of our records' ratio to the native eager time of the same case."""
    merged = {}
    for run_i, recs in enumerate(native_runs):
        for rec in recs:
            key = (rec["name"], rec["mode"])
            m = merged.setdefault(key, dict(rec, runs_ms=[]))
            m["runs_ms"].append(rec["median_ms"])
    out = []
    for m in merged.values():
        times = [t for t in m["runs_ms"] if t is not None]
        m["median_ms"] = statistics.mean(times) if times else None
        m["note"] = (m.get("note") or "") + " (mean of the native runs before and after; each in runs_ms)"
        out.append(m)
    cpu = {rec["name"]: rec["median_ms"] for rec in out if rec["mode"] == "cpu"}
    for rec in ours:
        base = cpu.get(rec["name"])
        if rec["median_ms"] and base:
            rec["ratio_vs_cpu"] = rec["median_ms"] / base
            rec.pop("ratio_iqr", None)
    for rec in out:  # Inductor against native eager, both from the baseline processes
        base = cpu.get(rec["name"])
        if rec["mode"] == "inductor" and rec["median_ms"] and base:
            rec["ratio_vs_cpu"] = rec["median_ms"] / base
            rec.pop("ratio_iqr", None)
    return out + ours


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--quick", action="store_true", help="a few minutes on a 2-core machine")
    p.add_argument("--out", default=os.path.join(HERE, "results", "latest.json"))
    p.add_argument("--only", default="", help="comma-separated case groups")
    p.add_argument("--modes", default="", help="comma-separated subset of " + ",".join(ALL_MODES))
    p.add_argument("--no-inductor", action="store_true", help="skip torch.compile(backend='inductor') on CPU")
    args = p.parse_args()
    if args.modes:
        SELECTED.intersection_update(args.modes.split(","))
    if SIDE == "native":  # a baseline child of the run below: records only
        r = Recorder(args.quick, inductor=not args.no_inductor)
        for g in [g for g in args.only.split(",") if g] or list(GROUPS):
            print(f"[native {g}]", flush=True)
            GROUPS[g](r)
        with open(args.out, "w") as f:
            json.dump(r.records, f)
        return
    native = [run_native(args, "before")]
    r = Recorder(args.quick, inductor=not args.no_inductor)
    groups = GROUPS
    chosen = [g for g in args.only.split(",") if g] or list(groups)
    print(f"torch_tpu bench ({'quick' if args.quick else 'full'}) on {r.platform}, torch {torch.__version__}, "
          f"{os.cpu_count()} cpus, threads {torch.get_num_threads()}")
    for g in chosen:
        print(f"[{g}]", flush=True)
        groups[g](r)
    native.append(run_native(args, "after"))
    r.records = merge_native(native, r.records)
    meta = {
        "date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
        "command": "python bench/run.py" + (" --quick" if args.quick else ""),
        "machine": f"{platform.machine()}, {os.cpu_count()} cpus, {platform.platform()}",
        "torch": torch.__version__, "plugin": torch_tpu._C._plugin_info(),
        "modes": ["cpu"] + TPU_MODES + ["compiled", "inductor"],
        "baseline": "native CPU eager and Inductor in their own processes (torch_tpu not loaded, PyTorch's "
                    "default settings), one before and one after the 'tpu' process; their mean is the CPU time",
    }
    os.makedirs(os.path.dirname(args.out), exist_ok=True)
    with open(args.out, "w") as f:
        json.dump({"meta": meta, "records": r.records}, f, indent=1)
    chart(r.records, os.path.splitext(args.out)[0] + ".png")
    print()
    print(table(r.records))
    print(f"\nwrote {args.out}")


if __name__ == "__main__":
    main()
