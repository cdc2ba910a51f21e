"""torch.distributed on 'tpu' measured (issue #17), 2 processes on this machine.

1. Collectives: latency (median ms per call, the device synchronised) and bus
   bandwidth (nccl-tests' definition: all_reduce moves 2(n-1)/n of the buffer
   per rank, all_gather / reduce_scatter / all_to_all (n-1)/n, broadcast 1)
   of all_reduce, all_gather_into_tensor, reduce_scatter_tensor, broadcast and
   all_to_all_single, float32, 4 KiB to 64 MiB per rank, through the 'tpu'
   backend on 'tpu' tensors and through gloo on CPU tensors, in one run.
2. Training steps: a DDP step and an FSDP2 step (an MLP 512-2048-512, batch 64
   per rank, AdamW) on 'tpu' in 1 process and in 2 (each rank its own batch),
   median ms per step, beside the same on CPU tensors over gloo.

    python bench/distributed.py [--quick]
The TorchTitan step times come from `make titan` (tools/titan/compare.py).
"""
import json
import os
import socket
import statistics
import subprocess
import sys
import time

SIZES = [4 << 10, 64 << 10, 1 << 20, 16 << 20, 64 << 20]
COLLECTIVES = ["all_reduce", "all_gather_into_tensor", "reduce_scatter_tensor", "broadcast", "all_to_all_single"]
BUS = {"all_reduce": lambda n: 2 * (n - 1) / n, "all_gather_into_tensor": lambda n: (n - 1) / n,
       "reduce_scatter_tensor": lambda n: (n - 1) / n, "broadcast": lambda n: 1.0,
       "all_to_all_single": lambda n: (n - 1) / n}


def _timed(fn, sync, iters):
    import torch.distributed as dist
    times = []
    for i in range(iters + 1):
        dist.barrier()
        t0 = time.perf_counter()
        fn()
        sync()
        if i:
            times.append((time.perf_counter() - t0) * 1e3)
    return statistics.median(times)


def collectives_child(quick):
    import torch
    import torch.distributed as dist
    world = dist.get_world_size()
    gloo = dist.new_group(backend="gloo")
    rows = []
    for size in SIZES[:3] if quick else SIZES:
        n = size // 4
        iters = 10 if size <= (1 << 20) else 3
        for name in COLLECTIVES:
            row = {"collective": name, "bytes": size}
            for dev, group in (("tpu", None), ("cpu", gloo)):
                x = torch.ones(n, device=dev)
                sync = torch.tpu.synchronize if dev == "tpu" else (lambda: None)
                if name == "all_reduce":
                    fn = lambda: dist.all_reduce(x, group=group)  # noqa: E731
                elif name == "all_gather_into_tensor":
                    out = torch.empty(n * world, device=dev)
                    fn = lambda: dist.all_gather_into_tensor(out, x, group=group)  # noqa: E731
                elif name == "reduce_scatter_tensor":
                    out = torch.empty(n // world, device=dev)
                    fn = lambda: dist.reduce_scatter_tensor(out, x, group=group)  # noqa: E731
                elif name == "broadcast":
                    fn = lambda: dist.broadcast(x, 0, group=group)  # noqa: E731
                else:
                    out = torch.empty(n, device=dev)
                    fn = lambda: dist.all_to_all_single(out, x, group=group)  # noqa: E731
                ms = _timed(fn, sync, iters)
                row[f"{dev}_ms"] = ms
                row[f"{dev}_busbw_GBps"] = size * BUS[name](world) / (ms / 1e3) / 1e9
            rows.append(row)
    return rows


def step_child(quick, world):
    import torch
    import torch.distributed as dist
    import torch.nn as nn
    from torch.distributed.device_mesh import init_device_mesh
    from torch.distributed.fsdp import fully_shard
    out = {}
    for kind in ("ddp", "fsdp2"):
        for dev in ("tpu", "cpu"):
            torch.manual_seed(0)
            model = nn.Sequential(nn.Linear(512, 2048), nn.GELU(), nn.Linear(2048, 512)).to(dev)
            if kind == "ddp":
                model = nn.parallel.DistributedDataParallel(model)  # the default group: 'tpu' or gloo by device
            else:
                mesh = init_device_mesh(dev, (world,))
                for m in model:
                    if isinstance(m, nn.Linear):
                        fully_shard(m, mesh=mesh)
                fully_shard(model, mesh=mesh)
            opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
            x = torch.randn(64, 512, device=dev)
            sync = torch.tpu.synchronize if dev == "tpu" else (lambda: None)

            def step():
                opt.zero_grad()
                model(x).square().mean().backward()
                opt.step()
            for _ in range(3):
                step()
            sync()
            out[f"{kind}_{dev}_ms"] = _timed(step, sync, 5 if quick else 15)
    return out


def child():
    import torch.distributed as dist
    import torch_tpu  # noqa: F401
    what, quick = sys.argv[2], "--quick" in sys.argv
    rank, world = int(os.environ["RANK"]), int(os.environ["WORLD_SIZE"])
    # 'tpu' tensors through the 'tpu' backend, CPU tensors through gloo
    dist.init_process_group("cpu:gloo,tpu:tpu", rank=rank, world_size=world)
    res = collectives_child(quick) if what == "collectives" else step_child(quick, world)
    if rank == 0:
        print(json.dumps(res), flush=True)
    dist.destroy_process_group()


def launch(what, world, quick):
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    args = [sys.executable, __file__, "--child", what] + (["--quick"] if quick else [])
    procs = [subprocess.Popen(args, stdout=subprocess.PIPE, text=True,
                              env=dict(os.environ, RANK=str(r), WORLD_SIZE=str(world), MASTER_ADDR="127.0.0.1",
                                       MASTER_PORT=str(port), TORCH_TPU_CPU_DEVICES="1", OMP_NUM_THREADS="1"))
             for r in range(world)]
    outs = [p.communicate(timeout=1200)[0] for p in procs]
    for p in procs:
        if p.returncode:
            raise RuntimeError(f"a rank of {what} failed (rc {p.returncode})")
    return json.loads([ln for ln in outs[0].splitlines() if ln.startswith(("{", "["))][-1])


def main():
    quick = "--quick" in sys.argv
    rows = launch("collectives", 2, quick)
    print("collectives, 2 processes, float32 (median ms per call; bus bandwidth GB/s):")
    print(f"  {'collective':24s} {'bytes':>9s} {'tpu ms':>9s} {'gloo-cpu ms':>12s} {'ratio':>6s} {'tpu GB/s':>9s} {'cpu GB/s':>9s}")
    for r in rows:
        print(f"  {r['collective']:24s} {r['bytes']:9d} {r['tpu_ms']:9.2f} {r['cpu_ms']:12.2f} "
              f"{r['tpu_ms'] / r['cpu_ms']:6.2f} {r['tpu_busbw_GBps']:9.3f} {r['cpu_busbw_GBps']:9.3f}")
    one, two = launch("steps", 1, quick), launch("steps", 2, quick)
    print("training steps, MLP 512-2048-512, batch 64 per rank, AdamW (median ms per step):")
    for kind in ("ddp", "fsdp2"):
        print(f"  {kind:6s} 'tpu': 1 process {one[f'{kind}_tpu_ms']:.1f}, 2 processes {two[f'{kind}_tpu_ms']:.1f}; "
              f"CPU over gloo: 1 process {one[f'{kind}_cpu_ms']:.1f}, 2 processes {two[f'{kind}_cpu_ms']:.1f}")


if __name__ == "__main__":
    if "--child" in sys.argv:
        child()
    else:
        main()
