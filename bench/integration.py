"""Integration points measured (issue #16, #17), each as ratios in one run:

1. AMP: an MLP training step (2 x Linear 1024->4096->1024, batch 256, AdamW)
   in float32 vs under torch.autocast("tpu", bfloat16), Strict and
   DeferAndFuse, median ms per step.
2. Events: the device time torch.tpu.Event measures for that step vs the
   host wall time around the same step with a synchronize.
3. Profiler: the same f32 step (Strict) with and without
   autograd.profiler.profile(use_device="tpu", use_kineto=False).
4. Distributed: all_reduce of 1 MiB and 16 MiB float32 over the 'tpu' c10d
   backend (host-staged through gloo) vs gloo on CPU tensors, 2 processes,
   median ms per call.

    python bench/integration.py
"""
import json
import os
import socket
import statistics
import subprocess
import sys
import time


def mlp_step_times(mode, amp, steps=12, profile=False):
    import torch
    import torch.nn as nn
    from torch_tpu.execution_mode import EagerMode, eager_mode
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(1024, 4096), nn.GELU(), nn.Linear(4096, 1024)).to("tpu")
    opt = torch.optim.AdamW(model.parameters(), lr=1e-4)
    x, y = torch.randn(256, 1024, device="tpu"), torch.randn(256, 1024, device="tpu")
    wall, device = [], []
    import contextlib
    prof = torch.autograd.profiler.profile(use_device="tpu", use_kineto=False) if profile else contextlib.nullcontext()
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


def main():
    import torch_tpu  # noqa: F401
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
    plain, _ = mlp_step_times("strict", amp=False)
    profiled, _ = mlp_step_times("strict", amp=False, profile=True)
    print(f"profiler (use_device='tpu'): step {plain:.1f} ms -> {profiled:.1f} ms profiled ({profiled / plain:.2f}x)")
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
    else:
        main()
