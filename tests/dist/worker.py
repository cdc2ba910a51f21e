"""One rank of tests/test_distributed.py: runs collectives and training on
'tpu' through the 'tpu' c10d backend and the same on CPU through gloo, in one
process, and prints one JSON line per check with both results.

usage: RANK=r WORLD_SIZE=n MASTER_ADDR=.. MASTER_PORT=.. python worker.py CHECKS
"""
import json
import os
import sys
from datetime import timedelta

import torch
import torch.distributed as dist
import torch.nn as nn

import torch_tpu  # noqa: F401  (registers the device and the 'tpu' backend)

RANK, WORLD = int(os.environ["RANK"]), int(os.environ["WORLD_SIZE"])


def report(name, got, ref):
    ok = all(torch.equal(g.cpu(), r) if not g.is_floating_point() else
             torch.allclose(g.cpu(), r, atol=1e-5, rtol=1e-5) for g, r in zip(got, ref))
    print(json.dumps({"rank": RANK, "check": name, "ok": bool(ok),
                      "got": [g.cpu().tolist() for g in got][:2], "ref": [r.tolist() for r in ref][:2]}), flush=True)


def data(shape, dtype=torch.float32, seed=0):
    g = torch.Generator().manual_seed(seed * 100 + RANK)
    t = torch.randn(shape, generator=g) * 10
    return t.to(dtype) if dtype.is_floating_point else t.round().to(dtype)


def collectives(gloo):
    # the same collective on 'tpu' (default group) and on CPU (gloo group)
    for dtype in (torch.float32, torch.bfloat16, torch.int64):
        ops = [dist.ReduceOp.SUM, dist.ReduceOp.MAX, dist.ReduceOp.MIN, dist.ReduceOp.PRODUCT]
        if dtype.is_floating_point:
            ops.append(dist.ReduceOp.AVG)
        for op in ops:
            x = data((3, 5), dtype)
            d, c = x.to("tpu"), x.clone()
            dist.all_reduce(d, op=op)
            if op == dist.ReduceOp.AVG:  # gloo has no AVG: its reference is SUM / world
                dist.all_reduce(c, op=dist.ReduceOp.SUM, group=gloo)
                c = c / WORLD
            else:
                dist.all_reduce(c, op=op, group=gloo)
            report(f"all_reduce[{dtype}, {op}]", [d], [c])
    x = data((4, 3))
    # non-contiguous input
    d, c = x.to("tpu").t(), x.clone().t()
    dist.all_reduce(d); dist.all_reduce(c, group=gloo)
    report("all_reduce[transposed]", [d], [c])
    outs_d = [torch.empty(4, 3, device="tpu") for _ in range(WORLD)]
    outs_c = [torch.empty(4, 3) for _ in range(WORLD)]
    dist.all_gather(outs_d, x.to("tpu")); dist.all_gather(outs_c, x, group=gloo)
    report("all_gather", outs_d, outs_c)
    od, oc = torch.empty(4 * WORLD, 3, device="tpu"), torch.empty(4 * WORLD, 3)
    dist.all_gather_into_tensor(od, x.to("tpu")); dist.all_gather_into_tensor(oc, x, group=gloo)
    report("all_gather_into_tensor", [od], [oc])
    big = data((2 * WORLD, 3))
    rd = torch.empty(2, 3, device="tpu")
    dist.reduce_scatter_tensor(rd, big.to("tpu"))
    ref = big.clone(); dist.all_reduce(ref, group=gloo)
    report("reduce_scatter_tensor", [rd], [ref.chunk(WORLD)[RANK]])
    rl = torch.empty(2, 3, device="tpu")
    dist.reduce_scatter(rl, [c.to("tpu") for c in big.chunk(WORLD)])
    report("reduce_scatter", [rl], [ref.chunk(WORLD)[RANK]])
    b_d, b_c = data((5,), seed=3).to("tpu"), data((5,), seed=3)
    dist.broadcast(b_d, src=1); dist.broadcast(b_c, src=1, group=gloo)
    report("broadcast", [b_d], [b_c])
    r_d, r_c = data((5,), seed=4).to("tpu"), data((5,), seed=4)
    dist.reduce(r_d, dst=0); dist.reduce(r_c, dst=0, group=gloo)
    report("reduce", [r_d if RANK == 0 else r_c], [r_c])
    g_in = data((2,), seed=5)
    g_d = [torch.empty(2, device="tpu") for _ in range(WORLD)] if RANK == 0 else None
    g_c = [torch.empty(2) for _ in range(WORLD)] if RANK == 0 else None
    dist.gather(g_in.to("tpu"), g_d, dst=0); dist.gather(g_in, g_c, dst=0, group=gloo)
    report("gather", g_d or [], g_c or [])
    s_src = [data((2,), seed=6 + i) for i in range(WORLD)]
    s_d, s_c = torch.empty(2, device="tpu"), torch.empty(2)
    dist.scatter(s_d, [t.to("tpu") for t in s_src] if RANK == 0 else None, src=0)
    dist.scatter(s_c, s_src if RANK == 0 else None, src=0, group=gloo)
    report("scatter", [s_d], [s_c])
    a_in = data((WORLD * 2, 3), seed=7)
    a_d, a_c = torch.empty_like(a_in, device="tpu"), torch.empty_like(a_in)
    dist.all_to_all_single(a_d, a_in.to("tpu")); dist.all_to_all_single(a_c, a_in, group=gloo)
    report("all_to_all_single", [a_d], [a_c])
    # uneven splits: rank r sends r+1+j rows to rank j
    in_splits = [RANK + 1 + j for j in range(WORLD)]
    out_splits = [j + 1 + RANK for j in range(WORLD)]
    u_in = data((sum(in_splits), 2), seed=8)
    u_d, u_c = torch.empty(sum(out_splits), 2, device="tpu"), torch.empty(sum(out_splits), 2)
    dist.all_to_all_single(u_d, u_in.to("tpu"), out_splits, in_splits)
    dist.all_to_all_single(u_c, u_in, out_splits, in_splits, group=gloo)
    report("all_to_all_single[uneven]", [u_d], [u_c])
    l_in = [data((2,), seed=9 + j) for j in range(WORLD)]
    l_d, l_c = [torch.empty(2, device="tpu") for _ in range(WORLD)], [torch.empty(2) for _ in range(WORLD)]
    dist.all_to_all(l_d, [t.to("tpu") for t in l_in]); dist.all_to_all(l_c, l_in, group=gloo)
    report("all_to_all", l_d, l_c)
    # point to point, blocking and async
    p = data((3,), seed=10)
    if RANK == 0:
        dist.send(p.to("tpu"), dst=1)
        w = dist.isend(p.to("tpu") * 2, dst=1)
        w.wait()
        report("send", [p], [p])
    elif RANK == 1:
        got = torch.empty(3, device="tpu")
        dist.recv(got, src=0)
        got2 = torch.empty(3, device="tpu")
        dist.irecv(got2, src=0).wait()
        sent = torch.randn(3, generator=torch.Generator().manual_seed(1000)) * 10
        report("recv", [got, got2], [sent, sent * 2])
    t = torch.ones(2, device="tpu")
    work = dist.all_reduce(t, async_op=True)
    work.wait()
    report("async_work", [t], [torch.full((2,), float(WORLD))])
    dist.barrier()


def ddp(gloo):
    def train(device, group):
        torch.manual_seed(0)
        model = nn.Sequential(nn.Linear(8, 16), nn.Tanh(), nn.Linear(16, 2)).to(device)
        dmodel = nn.parallel.DistributedDataParallel(model, process_group=group)
        opt = torch.optim.SGD(dmodel.parameters(), lr=0.1)
        gen = torch.Generator().manual_seed(RANK)
        for _ in range(4):
            x, y = torch.randn(4, 8, generator=gen), torch.randn(4, 2, generator=gen)
            opt.zero_grad()
            nn.functional.mse_loss(dmodel(x.to(device)), y.to(device)).backward()
            opt.step()
        return [p.detach().cpu() for p in model.parameters()]
    report("ddp", train("tpu", None), train("cpu", gloo))


def fsdp2(gloo):
    from torch.distributed.device_mesh import init_device_mesh
    from torch.distributed.fsdp import fully_shard

    def train(device):
        torch.manual_seed(0)
        model = nn.Sequential(nn.Linear(8, 16), nn.Tanh(), nn.Linear(16, 2)).to(device)
        if device == "tpu":
            mesh = init_device_mesh("tpu", (WORLD,))
            for layer in model:
                if isinstance(layer, nn.Linear):
                    fully_shard(layer, mesh=mesh)
            fully_shard(model, mesh=mesh)
        opt = torch.optim.SGD(model.parameters(), lr=0.1)
        gen = torch.Generator().manual_seed(RANK)
        grads_avg = device != "tpu"
        for _ in range(3):
            x, y = torch.randn(4, 8, generator=gen), torch.randn(4, 2, generator=gen)
            opt.zero_grad()
            nn.functional.mse_loss(model(x.to(device)), y.to(device)).backward()
            if grads_avg:  # the CPU reference: plain data parallel over gloo
                for p in model.parameters():
                    dist.all_reduce(p.grad, group=gloo)
                    p.grad /= WORLD
            opt.step()
        if device == "tpu":
            return [p.full_tensor().detach().cpu() for p in model.parameters()]
        return [p.detach() for p in model.parameters()]
    report("fsdp2", train("tpu"), train("cpu"))


def dtensor(gloo):
    from torch.distributed.device_mesh import init_device_mesh
    from torch.distributed.tensor import Replicate, Shard, distribute_tensor
    from torch.distributed.tensor.parallel import ColwiseParallel, RowwiseParallel, parallelize_module
    mesh = init_device_mesh("tpu", (WORLD,))
    a = torch.randn(8, 6, generator=torch.Generator().manual_seed(0))
    b = torch.randn(6, 4, generator=torch.Generator().manual_seed(1))
    da = distribute_tensor(a.to("tpu"), mesh, [Shard(0)])
    db = distribute_tensor(b.to("tpu"), mesh, [Replicate()])
    report("dtensor_matmul", [(da @ db).full_tensor()], [a @ b])
    report("dtensor_redistribute", [da.redistribute(mesh, [Shard(1)]).full_tensor()], [a])
    report("dtensor_sum", [da.sum().full_tensor()], [a.sum()])
    # tensor parallel MLP: colwise then rowwise, forward and backward vs CPU
    torch.manual_seed(0)
    ref = nn.Sequential(nn.Linear(6, 8), nn.ReLU(), nn.Linear(8, 6))
    tp = nn.Sequential(nn.Linear(6, 8), nn.ReLU(), nn.Linear(8, 6))
    tp.load_state_dict(ref.state_dict())
    tp = parallelize_module(tp.to("tpu"), mesh, {"0": ColwiseParallel(), "2": RowwiseParallel()})
    x = torch.randn(5, 6, generator=torch.Generator().manual_seed(2))
    out = tp(x.to("tpu"))
    out.sum().backward()
    r = ref(x)
    r.sum().backward()
    report("tensor_parallel", [out, tp[0].weight.grad.full_tensor()], [r, ref[0].weight.grad])


def funcol(gloo):
    """Functional collectives (torch.ops._c10d_functional) eager, in DeferAndFuse and compiled."""
    import torch.distributed._functional_collectives as fc
    from torch_tpu.execution_mode import EagerMode, eager_mode
    x = data((4, 3), seed=11)
    ref = x.clone()
    dist.all_reduce(ref, group=gloo)
    ref = ref * 2 + 1
    ref_ag = torch.cat([data((4, 3), seed=11) if r == RANK else torch.empty(4, 3) for r in range(WORLD)])
    dist.all_gather_into_tensor(ref_ag, x, group=gloo)

    def f(t):
        return fc.all_reduce(t * 2, "sum", dist.group.WORLD) + 1

    report("funcol_all_reduce[eager]", [f(x.to("tpu"))], [ref])
    report("funcol_all_gather[eager]", [fc.all_gather_tensor(x.to("tpu"), 0, dist.group.WORLD)], [ref_ag])
    with eager_mode(EagerMode.DEFER_AND_FUSE):
        got = f(x.to("tpu")).cpu()
    report("funcol_all_reduce[defer]", [got], [ref])
    report("funcol_all_reduce[compiled]", [torch.compile(f, backend="tpu")(x.to("tpu"))], [ref])


def dead_rank(gloo):
    """Rank 1 dies; rank 0's next collective must fail with an error, not hang."""
    import time
    if RANK == 1:
        sys.stdout.flush()
        os._exit(0)
    time.sleep(1)
    t0 = time.time()
    try:
        dist.all_reduce(torch.ones(2, device="tpu"))
        raised = ""
    except Exception as e:  # noqa: BLE001
        raised = f"{type(e).__name__}: {e}"
    print(json.dumps({"rank": RANK, "check": "dead_rank", "ok": bool(raised), "got": [raised[:200]],
                      "ref": [], "seconds": time.time() - t0}), flush=True)
    sys.stdout.flush()
    os._exit(0)


def mismatch(gloo):
    """Ranks that pass different shapes or dtypes to one collective all get a
    RuntimeError naming every rank's tensors (gloo alone aborts the process);
    the group stays usable afterwards."""
    cases = {
        "all_reduce[shape]": lambda: dist.all_reduce(torch.ones(4 if RANK == 0 else 6, device="tpu")),
        "all_reduce[dtype]": lambda: dist.all_reduce(
            torch.ones(4, device="tpu", dtype=torch.float32 if RANK == 0 else torch.bfloat16)),
        "broadcast[shape]": lambda: dist.broadcast(torch.ones(2, 3 + RANK, device="tpu"), src=0),
        "all_gather_into_tensor[shape]": lambda: dist.all_gather_into_tensor(
            torch.empty(4 * WORLD, device="tpu"), torch.ones(4 + RANK, device="tpu")),
    }
    for name, fn in cases.items():
        try:
            fn()
            msg = ""
        except RuntimeError as e:
            msg = str(e)
        want = [f"rank {r}:" for r in range(WORLD)] + ["different tensors on different ranks"]
        print(json.dumps({"rank": RANK, "check": f"mismatch_{name}", "ok": all(w in msg for w in want),
                          "got": [msg[:300]], "ref": want}), flush=True)
    x = torch.full((3,), float(RANK + 1), device="tpu")
    dist.all_reduce(x)  # still works
    report("mismatch_then_all_reduce", [x], [torch.full((3,), float(sum(range(1, WORLD + 1))))])


def p2p(gloo):
    """Point to point as pipelining uses it: every rank sends before it
    receives (a send that waited for its receiver at once deadlocks), the
    received buffer requires grad, and batch_isend_irecv runs a ring."""
    peer = (RANK + 1) % WORLD
    prev = (RANK - 1) % WORLD
    x = data((5,), seed=20)
    y = torch.empty(5, device="tpu", requires_grad=True)
    w = dist.isend(x.to("tpu"), dst=peer)
    r = dist.irecv(y, src=prev)
    w.wait(); r.wait()
    want = torch.randn(5, generator=torch.Generator().manual_seed(20 * 100 + prev)) * 10
    report("p2p[send_first]", [y.detach()], [want])
    z = torch.empty(5, device="tpu")
    ops = [dist.P2POp(dist.isend, (x * 3).to("tpu"), peer), dist.P2POp(dist.irecv, z, prev)]
    for work in dist.batch_isend_irecv(ops):
        work.wait()
    report("p2p[batch_isend_irecv]", [z], [want * 3])


def premul_sum(gloo):
    """ReduceOp.PREMUL_SUM (FSDP2 divides gradients with it): the sum of each
    rank's input times the factor, as on NCCL; gloo's reference multiplies first."""
    x = data((4, 6), seed=30)
    d = x.to("tpu")
    dist.all_reduce(d, op=dist._make_nccl_premul_sum(0.25))
    c = x * 0.25
    dist.all_reduce(c, group=gloo)
    report("premul_sum[all_reduce]", [d], [c])
    out_d = torch.empty(4 // WORLD, 6, device="tpu")
    dist.reduce_scatter_tensor(out_d, x.to("tpu"), op=dist._make_nccl_premul_sum(0.5))
    full = x * 0.5
    dist.all_reduce(full, group=gloo)
    report("premul_sum[reduce_scatter_tensor]", [out_d], [full.chunk(WORLD)[RANK]])


def coalesced(gloo):
    """Several collectives in one _coalescing_manager block (what FSDP and
    batch_isend_irecv build on), waited for together."""
    a, b = data((3,), seed=40), data((2, 2), seed=41)
    da, db = a.to("tpu"), b.to("tpu")
    with dist._coalescing_manager(device=torch.device("tpu"), async_ops=True) as cm:
        dist.all_reduce(da)
        dist.all_reduce(db)
    cm.wait()
    dist.all_reduce(a, group=gloo); dist.all_reduce(b, group=gloo)
    report("coalesced[all_reduce]", [da, db], [a, b])


def pipeline(gloo):
    """torch.distributed.pipelining: a 4-layer MLP split in 2 stages, one per
    rank (each rank runs a different program), 4 microbatches, GPipe and
    1F1B; the loss and each stage's gradients equal the unsplit model's on CPU."""
    from torch.distributed.pipelining import PipelineStage, Schedule1F1B, ScheduleGPipe

    def full_model():
        torch.manual_seed(0)
        return nn.Sequential(nn.Linear(8, 16), nn.Tanh(), nn.Linear(16, 16), nn.Tanh(), nn.Linear(16, 4))

    gen = torch.Generator().manual_seed(7)
    x, y = torch.randn(8, 8, generator=gen), torch.randn(8, 4, generator=gen)
    ref = full_model()
    ref_loss = nn.functional.mse_loss(ref(x), y, reduction="sum")
    ref_loss.backward()
    split = {0: slice(0, 2), 1: slice(2, 5)}[RANK]
    for name, schedule_cls in (("gpipe", ScheduleGPipe), ("1f1b", Schedule1F1B)):
        part = full_model()[split].to("tpu")
        stage = PipelineStage(part, RANK, WORLD, torch.device("tpu"))
        losses = []
        sched = schedule_cls(stage, n_microbatches=4, scale_grads=False,
                             loss_fn=lambda out, tgt: nn.functional.mse_loss(out, tgt, reduction="sum"))
        if RANK == 0:
            sched.step(x.to("tpu"))
        else:
            sched.step(target=y.to("tpu"), losses=losses)
        want = [p.grad for p in ref[split].parameters()]
        got = [p.grad for p in part.parameters()]
        if RANK == WORLD - 1:
            got.append(torch.stack(losses).sum().reshape(1))
            want.append(ref_loss.detach().reshape(1))
        report(f"pipeline[{name}]", got, want)


def main():
    checks = sys.argv[1].split(",")
    backend = os.environ.get("TTPU_TEST_BACKEND", "tpu") or None  # "": init_process_group()'s default map
    dist.init_process_group(backend, rank=RANK, world_size=WORLD, timeout=timedelta(seconds=60))
    gloo = dist.new_group(backend="gloo")
    for name in checks:
        globals()[name](gloo)
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
