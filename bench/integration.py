"""Integration points measured (issue #16, #17), each as ratios in one run:

1. AMP: an MLP training step (2 x Linear 1024->4096->1024, batch 256, AdamW)
   in float32 vs under torch.autocast("tpu", bfloat16), Strict and
   DeferAndFuse, median ms per step.
2. Events: the device time torch.tpu.Event measures for that step vs the
   host wall time around the same step with a synchronize.
3. Profiler: the same f32 step (and a small one, 64-256-64, batch 32, where
   per-op host cost dominates) without a profiler, under
   torch.profiler.profile(activities=[CPU, PrivateUse1]) (the Kineto device
   track), in Strict and DeferAndFuse, and under the legacy stubs
   (autograd.profiler.profile(use_device="tpu", use_kineto=False)), Strict;
   torch.profiler with CPU activity only (PyTorch's own op recording, for
   reference); runs alternate, best median of three each; and the host time of one
   small op under each. `--profiler` runs only this part.
4. Streams: a 64 MiB host-to-device copy from pinned memory issued
   non_blocking on a side stream while the default stream computes (a chain of
   512x512 matmuls that does not read the copy), against the same copy done
   blocking before the compute; the copy alone and the compute alone; best
   median of three alternating runs. `--streams` runs only this part.
5. Distributed: all_reduce of 1 MiB and 16 MiB float32 over the 'tpu' c10d
   backend (host-staged through gloo) vs gloo on CPU tensors, 2 processes,
   median ms per call.

    python bench/integration.py [--profiler | --streams]
"""
import json
import os
import socket
import statistics
import subprocess
import sys
import time


def _profiler(kind):
    import contextlib
    import torch
    if kind == "stubs":
        return torch.autograd.profiler.profile(use_device="tpu", use_kineto=False)
    if kind in ("kineto", "cpu"):
        from torch.profiler import ProfilerActivity, profile
        if kind == "cpu":  # PyTorch's own op recording alone: what the device track adds is the difference
            return profile(activities=[ProfilerActivity.CPU])
        return profile(activities=[ProfilerActivity.CPU, ProfilerActivity.PrivateUse1])
    return contextlib.nullcontext()


def mlp_step_times(mode, amp, steps=12, profile=None, width=1024, batch=256):
    import torch
    import torch.nn as nn
    from torch_tpu.execution_mode import EagerMode, eager_mode
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(width, 4 * width), nn.GELU(), nn.Linear(4 * width, width)).to("tpu")
    opt = torch.optim.AdamW(model.parameters(), lr=1e-4)
    x, y = torch.randn(batch, width, device="tpu"), torch.randn(batch, width, device="tpu")
    wall, device = [], []
    prof = _profiler(profile)
    with prof, eager_mode(EagerMode.DEFER_AND_FUSE if mode == "defer" else EagerMode.STRICT):
        for i in range(steps):
            start, end = torch.tpu.Event(enable_timing=True), torch.tpu.Event(enable_timing=True)
            torch.tpu.synchronize()
            t0 = time.perf_counter()
            start.record()
            with torch.autocast("tpu", dtype=torch.bfloat16, enabled=amp):
                loss = nn.functional.mse_loss(model(x), y)
            loss.backward()
            opt.step()
            opt.zero_grad(set_to_none=True)
            end.record()
            torch.tpu.synchronize()
            if i >= 3:  # warm-up: compilation
                wall.append((time.perf_counter() - t0) * 1e3)
                device.append(start.elapsed_time(end))
    return statistics.median(wall), statistics.median(device)


def dist_child():
    import torch
    import torch.distributed as dist
    import torch_tpu  # noqa: F401
    rank = int(os.environ["RANK"])
    dist.init_process_group("tpu", rank=rank, world_size=2)
    gloo = dist.new_group(backend="gloo")
    out = {}
    for mib in (1, 16):
        n = mib * (1 << 20) // 4
        for name, t, group in (("tpu", torch.ones(n, device="tpu"), None), ("gloo_cpu", torch.ones(n), gloo)):
            times = []
            for i in range(12):
                dist.barrier()
                t0 = time.perf_counter()
                dist.all_reduce(t, group=group)
                if name == "tpu":
                    torch.tpu.synchronize()
                if i >= 2:
                    times.append((time.perf_counter() - t0) * 1e3)
            out[f"{name}_{mib}MiB_ms"] = statistics.median(times)
    if rank == 0:
        print(json.dumps(out), flush=True)
    dist.destroy_process_group()


def per_op_us(kind, n=3000):
    import torch
    x = torch.ones(8, device="tpu")
    for _ in range(200):
        x.add_(1)
    torch.tpu.synchronize()
    with _profiler(kind):
        t0 = time.perf_counter()
        for _ in range(n):
            x.add_(1)
        torch.tpu.synchronize()
        dt = time.perf_counter() - t0
    return dt / n * 1e6


def profiler_overhead():
    print("profiler overhead (MLP training step, median ms, best of 3 alternating runs):")
    for size, width, batch, steps in (("1024-4096-1024 b256", 1024, 256, 12), ("64-256-64 b32", 64, 32, 60)):
        for mode, kinds in (("strict", ("cpu", "kineto", "stubs")), ("defer", ("cpu", "kineto"))):
            best = {}
            for _ in range(3):
                for kind in (None,) + kinds:
                    t, _ = mlp_step_times(mode, amp=False, steps=steps, profile=kind, width=width, batch=batch)
                    best[kind] = min(best.get(kind, t), t)
            for kind in kinds:
                what = {"cpu": "torch.profiler CPU only", "kineto": "torch.profiler CPU+PrivateUse1",
                        "stubs": "autograd.profiler stubs"}[kind]
                print(f"  {size:20s} {mode:7s} {what:31s}: {best[None]:7.2f} ms -> {best[kind]:7.2f} ms "
                      f"({best[kind] / best[None]:.2f}x)")
    best = {}
    for _ in range(3):
        for kind in (None, "cpu", "kineto"):
            t = per_op_us(kind)
            best[kind] = min(best.get(kind, t), t)
    print(f"  host time per op (x.add_(1), Strict, best of 3): {best[None]:.1f} us; torch.profiler CPU only "
          f"{best['cpu']:.1f} us; CPU+PrivateUse1 {best['kineto']:.1f} us")


def stream_overlap(mib=64, rounds=3, reps=7):
    import torch
    p = torch.randn(mib * (1 << 20) // 4).pin_memory()
    w = torch.randn(512, 512, device="tpu") / 23

    def compute():
        y = w
        for _ in range(24):
            y = torch.tanh(y @ w)
        return y

    side = torch.tpu.Stream()

    def copy_alone():
        p.to("tpu", non_blocking=False)

    def serial():
        p.to("tpu", non_blocking=False)
        compute()

    def overlapped():
        with torch.tpu.stream(side):
            p.to("tpu", non_blocking=True)
        compute()

    def med_ms(fn):
        times = []
        for _ in range(reps):
            torch.tpu.synchronize()
            t0 = time.perf_counter()
            fn()
            torch.tpu.synchronize()
            times.append((time.perf_counter() - t0) * 1e3)
        return statistics.median(times)

    cases = {"copy": copy_alone, "compute": compute, "copy then compute": serial,
             "copy on a side stream beside compute": overlapped}
    for fn in cases.values():  # warm-up: compilation
        med_ms(fn)
    best = {}
    for _ in range(rounds):
        for name, fn in cases.items():
            best[name] = min(best.get(name, float("inf")), med_ms(fn))
    print(f"stream overlap ({mib} MiB pinned host-to-device copy, 24 matmul+tanh 512x512; median ms, best of "
          f"{rounds} alternating runs):")
    for name, t in best.items():
        print(f"  {name:38s} {t:7.2f} ms")
    hidden = (best["copy then compute"] - best["copy on a side stream beside compute"]) / best["copy"]
    print(f"  share of the copy hidden behind compute: {hidden:.0%}")
    return best


def main():
    import torch_tpu  # noqa: F401
    stream_overlap()
    rows = {}
    for mode in ("strict", "defer"):
        f32_wall, f32_dev = mlp_step_times(mode, amp=False)
        bf16_wall, bf16_dev = mlp_step_times(mode, amp=True)
        rows[mode] = {"f32_ms": round(f32_wall, 2), "bf16_autocast_ms": round(bf16_wall, 2),
                      "bf16/f32": round(bf16_wall / f32_wall, 3),
                      "event_ms/wall_ms (f32)": round(f32_dev / f32_wall, 3)}
    print("AMP and events (MLP 1024-4096-1024, batch 256, AdamW):")
    for mode, r in rows.items():
        print(f"  {mode:7s} {json.dumps(r)}")
    profiler_overhead()
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    procs = [subprocess.Popen([sys.executable, __file__, "--dist-child"], stdout=subprocess.PIPE, text=True,
                              env=dict(os.environ, RANK=str(r), WORLD_SIZE="2", MASTER_ADDR="127.0.0.1",
                                       MASTER_PORT=str(port), TORCH_TPU_CPU_DEVICES="1"))
             for r in range(2)]
    outs = [p.communicate(timeout=600)[0] for p in procs]
    d = json.loads([l for l in outs[0].splitlines() if l.startswith("{")][0])
    print("all_reduce, 2 processes (ms per call, median):")
    for mib in (1, 16):
        t, g = d[f"tpu_{mib}MiB_ms"], d[f"gloo_cpu_{mib}MiB_ms"]
        print(f"  {mib:2d} MiB f32: 'tpu' backend {t:.2f} ms, gloo on CPU tensors {g:.2f} ms, ratio {t / g:.2f}")


if __name__ == "__main__":
    if "--dist-child" in sys.argv:
        dist_child()
    elif "--streams" in sys.argv:
        import torch_tpu  # noqa: F401
        stream_overlap()
    elif "--profiler" in sys.argv:
        import torch_tpu  # noqa: F401
        profiler_overhead()
    else:
        main()
