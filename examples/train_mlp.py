"""Train a small MLP classifier on device 'tpu' and, step for step, the same
model on CPU; print both losses side by side.

Data: a synthetic 4-class problem (Gaussian blobs through a random nonlinear
map), made here, nothing downloaded. Run with `make demo`.
"""
import argparse
import sys
import time

import torch
import torch.nn as nn
import torch.nn.functional as F

import torch_tpu  # noqa: F401  (registers the 'tpu' device; autoload also does)


def make_data(n, features, classes, seed):
    g = torch.Generator().manual_seed(seed)
    centers = torch.randn(classes, features, generator=g) * 0.6
    labels = torch.randint(0, classes, (n,), generator=g)
    x = centers[labels] + 1.5 * torch.randn(n, features, generator=g)
    mix = torch.randn(features, features, generator=g) / features ** 0.5
    return torch.tanh(x @ mix) + 0.1 * x, labels


def make_model(features, hidden, classes):
    return nn.Sequential(
        nn.Linear(features, hidden), nn.GELU(),
        nn.Linear(hidden, hidden), nn.SiLU(),
        nn.Linear(hidden, classes),
    )


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--steps", type=int, default=300)
    p.add_argument("--batch", type=int, default=128)
    p.add_argument("--hidden", type=int, default=128)
    p.add_argument("--lr", type=float, default=3e-3)
    args = p.parse_args()

    features, classes = 32, 4
    x, y = make_data(4096, features, classes, seed=0)
    torch.manual_seed(0)
    cpu_model = make_model(features, args.hidden, classes)
    tpu_model = make_model(features, args.hidden, classes)
    tpu_model.load_state_dict(cpu_model.state_dict())
    tpu_model = tpu_model.to("tpu")
    x_tpu, y_tpu = x.to("tpu"), y.to("tpu")

    opt_cpu = torch.optim.AdamW(cpu_model.parameters(), lr=args.lr, weight_decay=0.01)
    opt_tpu = torch.optim.AdamW(tpu_model.parameters(), lr=args.lr, weight_decay=0.01)

    print(f"torch_tpu demo: MLP {features}-{args.hidden}-{args.hidden}-{classes}, AdamW, batch {args.batch}, "
          f"{args.steps} steps; plugin: {torch.tpu.get_device_name()} ({torch_tpu._C._plugin_info()['platform_name']})")
    print(f"{'step':>6} {'loss tpu':>10} {'loss cpu':>10} {'|diff|':>9} {'compiled':>9} {'elapsed':>8}")
    compiled_after = {}
    t0 = time.time()
    max_diff = 0.0
    n = x.shape[0]
    for step in range(1, args.steps + 1):
        lo = ((step - 1) * args.batch) % (n - args.batch)
        xb, yb = x[lo:lo + args.batch], y[lo:lo + args.batch]
        xt, yt = x_tpu[lo:lo + args.batch], y_tpu[lo:lo + args.batch]

        opt_cpu.zero_grad()
        loss_cpu = F.cross_entropy(cpu_model(xb), yb)
        loss_cpu.backward()
        opt_cpu.step()

        opt_tpu.zero_grad()
        loss_tpu = F.cross_entropy(tpu_model(xt), yt)
        loss_tpu.backward()
        opt_tpu.step()

        if step in (1, 2, 10):
            torch.tpu.synchronize()
            compiled_after[step] = torch.tpu.compile_stats()["compiles"]
        if step == 1 or step % 25 == 0 or step == args.steps:
            lt, lc = loss_tpu.item(), loss_cpu.item()
            max_diff = max(max_diff, abs(lt - lc))
            stats = torch.tpu.compile_stats()
            print(f"{step:>6} {lt:>10.5f} {lc:>10.5f} {abs(lt - lc):>9.2e} {stats['compiles']:>9} "
                  f"{time.time() - t0:>7.1f}s", flush=True)
    with torch.no_grad():
        acc = (tpu_model(x_tpu).argmax(1) == y_tpu).float().mean().item()
    stats = torch.tpu.compile_stats()
    print(f"train accuracy on tpu: {acc:.3f}; max |loss diff| tpu vs cpu: {max_diff:.2e}")
    print(f"executables compiled: after step 1: {compiled_after.get(1)}, after step 2: {compiled_after.get(2)}, "
          f"after step 10: {compiled_after.get(10)}, at the end: {stats['compiles']} "
          f"(cache hits {stats['cache_hits']}, compile time {stats['compile_seconds']:.2f}s)")
    ok = max_diff < 1e-3
    print("OK: tpu matches cpu" if ok else "MISMATCH: tpu and cpu losses differ")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
