"""The c10d backend for 'tpu': ``torch.distributed.init_process_group("tpu")``.

One process per device, on PyTorch's own distributed engine: the backend is a
``c10d.Backend`` registered for device 'tpu' (as NCCL is for 'cuda'), so
``init_process_group("tpu")``, ``init_process_group()`` (device map
``cpu:gloo,tpu:tpu``), ``device_id=torch.device("tpu", r)``, DDP, FSDP2,
DTensor and the functional collectives reach it through c10d's ordinary
dispatch (c10d's PrivateUse1 kernels call this backend).

Transport, today: host-staged. The collective's 'tpu' tensors are copied to
the host (a sync point: the device work producing them completes first, in
every execution mode, since the copy reads their values), the collective runs
in a gloo process group built on the same store, and the results are copied
back into the 'tpu' tensors. Gloo's missing pieces are filled in here:
ReduceOp.AVG is a SUM divided by the group size, on the device. Every
collective completes before it returns, so a returned ``Work`` is already
done (``wait()`` is free, futures are already set).

Before a collective whose tensors must agree across ranks (all_reduce,
broadcast, reduce, all_gather, reduce_scatter), the ranks compare a small
signature (the collective, each tensor's dtype and shape) in one gloo
all_gather: a rank that passes another shape or dtype makes every rank raise
a RuntimeError naming each rank's tensors, where gloo alone would abort the
process ("Received data size doesn't match expected size") or read garbage.
``TORCH_TPU_COLLECTIVE_CHECKS=0`` skips the check (one small host
collective per call).

The device-native path (PJRT clients created with the store's key-value
callbacks, StableHLO collectives compiled per rank) belongs behind this same
interface; it is not built yet (see the README's distributed section).
"""
from __future__ import annotations

import datetime
import os
import threading

import torch
import torch.distributed as dist
from torch._C._distributed_c10d import Backend as _CBackend
from torch._C._distributed_c10d import Work as _CWork

BACKEND_NAME = "tpu"


class _DoneWork(_CWork):
    """A collective that already completed; its future holds the outputs."""

    def __init__(self, result):
        super().__init__()
        self._result = result
        self._future = torch.futures.Future()
        self._future.set_result(result)

    def wait(self, timeout=None):
        return True

    def is_completed(self):
        return True

    def is_success(self):
        return True

    def result(self):
        return self._result

    def get_future(self):
        return self._future

    def synchronize(self):
        pass


class _PendingWork(_CWork):
    """A point-to-point op in flight on gloo (send/recv run asynchronously,
    as on NCCL: pipelining posts a rank's sends before its receives, and a
    send that waited for its receiver at once would deadlock two ranks that
    both send first). wait() waits for gloo, then runs `finish` once (a recv
    copies the host buffer into the 'tpu' tensors)."""

    def __init__(self, gloo_work, result, finish=None):
        super().__init__()
        self._gloo_work = gloo_work
        self._result = result
        self._finish = finish
        self._future = torch.futures.Future()
        self._lock = threading.Lock()  # two threads waiting finish it once

    def wait(self, timeout=None):
        with self._lock:
            if not self._future.done():
                if timeout is None or timeout == datetime.timedelta(0):
                    self._gloo_work.wait()
                else:
                    self._gloo_work.wait(timeout)
                if self._finish is not None:
                    self._finish()
                self._future.set_result(self._result)
        return True

    def is_completed(self):
        # the transfer has ended (a receive's copy to the device runs in wait())
        return self._future.done() or (self._gloo_work is not None and self._gloo_work.is_completed())

    def is_success(self):
        return self._future.done()

    def result(self):
        self.wait()
        return self._result

    def get_future(self):
        self.wait()
        return self._future

    def synchronize(self):
        self.wait()


class _GroupWork(_PendingWork):
    """What end_coalescing returns: waits for every op issued in the block."""

    def __init__(self, works):
        super().__init__(None, [])
        self._works = works

    def wait(self, timeout=None):
        with self._lock:
            if not self._future.done():
                for w in self._works:
                    w.wait(timeout)
                self._future.set_result([])
        return True


def _host(t: torch.Tensor) -> torch.Tensor:
    return t.detach().to("cpu").contiguous()


def _flat(lists):
    return [t for ts in lists for t in ts]


# The signature one rank sends: [collective, tensor count, then per tensor
# dtype, rank and up to _MAX_DIMS sizes], zero-padded to a fixed length so
# that every rank's entry has the same shape whatever it passed.
_MAX_TENSORS, _MAX_DIMS = 8, 8
_SIG_LEN = 2 + _MAX_TENSORS * (2 + _MAX_DIMS)
_DTYPES = [getattr(torch, n) for n in (
    "float32", "float64", "float16", "bfloat16", "int8", "int16", "int32", "int64", "uint8", "bool",
    "complex64", "complex128", "float8_e4m3fn", "float8_e5m2", "uint16", "uint32", "uint64")]
_OPS = ["all_reduce", "broadcast", "reduce", "all_gather", "reduce_scatter"]


def _signature(op: str, tensors) -> torch.Tensor:
    sig = torch.zeros(_SIG_LEN, dtype=torch.int64)
    sig[0], sig[1] = _OPS.index(op) + 1, len(tensors)
    for i, t in enumerate(tensors[:_MAX_TENSORS]):
        base = 2 + i * (2 + _MAX_DIMS)
        sig[base] = _DTYPES.index(t.dtype) + 1 if t.dtype in _DTYPES else 100
        sig[base + 1] = t.dim()
        dims = list(t.shape)[:_MAX_DIMS]
        sig[base + 2:base + 2 + len(dims)] = torch.tensor(dims, dtype=torch.int64)
    return sig


def _describe(sig: torch.Tensor) -> str:
    parts = []
    for i in range(min(int(sig[1]), _MAX_TENSORS)):
        base = 2 + i * (2 + _MAX_DIMS)
        code, ndim = int(sig[base]), int(sig[base + 1])
        dtype = str(_DTYPES[code - 1]).replace("torch.", "") if 0 < code <= len(_DTYPES) else "other"
        parts.append(f"{dtype}{list(sig[base + 2:base + 2 + min(ndim, _MAX_DIMS)].tolist())}")
    op = _OPS[int(sig[0]) - 1] if 0 < int(sig[0]) <= len(_OPS) else "?"
    return f"{op}({', '.join(parts)})"


class TpuBackend(_CBackend):
    """Host-staged collectives for 'tpu' tensors over a gloo group."""

    def __init__(self, store, rank: int, size: int, timeout: datetime.timedelta):
        super().__init__(rank, size)
        self._rank, self._size = rank, size
        self._gloo = dist.ProcessGroupGloo(dist.PrefixStore("torch_tpu/", store), rank, size, timeout)
        self._check = os.environ.get("TORCH_TPU_COLLECTIVE_CHECKS", "1") != "0"

    def getBackendName(self):  # noqa: N802  (c10d's name)
        return BACKEND_NAME

    # c10d reads these as attributes; as plain class attributes (not
    # properties) they do not bounce between Python and the C++ trampoline.
    supports_splitting = False
    supports_coalescing = False

    # -- helpers ---------------------------------------------------------------

    def _run(self, work):
        work.wait()

    def _agree(self, op, tensors):
        """Every rank passes the same dtypes and shapes to `op`, or every rank raises."""
        if not self._check or self._size == 1:
            return
        mine = _signature(op, list(tensors))
        every = [torch.empty_like(mine) for _ in range(self._size)]
        self._run(self._gloo.allgather([every], [mine]))
        if all(torch.equal(e, every[0]) for e in every):
            return
        seen = "; ".join(f"rank {r}: {_describe(e)}" for r, e in enumerate(every))
        raise RuntimeError(f"torch_tpu: {op} got different tensors on different ranks ({seen}); every rank must "
                           f"pass the same dtype and shape to a collective "
                           f"(TORCH_TPU_COLLECTIVE_CHECKS=0 turns this check off)")

    def _reduce_opts(self, opts, cls):
        """Gloo has neither AVG nor PREMUL_SUM: AVG runs as SUM divided
        afterwards, PREMUL_SUM(f) as SUM of each rank's input times f (NCCL's
        meaning; FSDP2 divides gradients with it). Returns the options gloo
        runs, whether to divide by the world size, and the factor (or None)."""
        op = opts.reduceOp
        avg = op == dist.ReduceOp.AVG
        premul = op == dist.ReduceOp.PREMUL_SUM
        if not avg and not premul:
            return opts, False, None
        o = cls()
        o.reduceOp = dist.ReduceOp.SUM
        for name in ("timeout", "rootRank", "rootTensor"):
            if hasattr(opts, name):
                setattr(o, name, getattr(opts, name))
        factor = None
        if premul:
            factor = op.__getstate__()[1]
            if isinstance(factor, torch.Tensor):
                factor = factor.item()
        return o, avg, factor

    @staticmethod
    def _premul(hosts, factor):
        if factor is not None:
            for h in hosts:
                h.mul_(factor)
        return hosts

    def _allreduce_opts(self, opts):
        """An all_reduce with `opts`' reduce op (reduce_scatter and the
        coalesced all_reduce run through gloo's all_reduce)."""
        o = dist.AllreduceOptions()
        o.reduceOp = opts.reduceOp
        return self._reduce_opts(o, dist.AllreduceOptions)

    def _finish(self, targets, hosts, avg=False):
        for t, h in zip(targets, hosts):
            if avg:
                if not h.is_floating_point() and not h.is_complex():
                    raise RuntimeError(f"torch_tpu: ReduceOp.AVG needs a floating point tensor, got {h.dtype}")
                h = h / self._size
            with torch.no_grad():  # a write into the tensor's memory, as NCCL's; not an autograd op
                t.copy_(h)
        return _DoneWork(targets)

    # -- collectives -----------------------------------------------------------

    def allreduce(self, tensors, opts=None):
        opts = opts or dist.AllreduceOptions()
        self._agree("all_reduce", tensors)
        o, avg, factor = self._reduce_opts(opts, dist.AllreduceOptions)
        hosts = self._premul([_host(t) for t in tensors], factor)
        self._run(self._gloo.allreduce(hosts, o))
        return self._finish(tensors, hosts, avg)

    def allreduce_coalesced(self, tensors, opts=None):
        opts = opts or dist.AllreduceCoalescedOptions()
        self._agree("all_reduce", tensors)
        o, avg, factor = self._allreduce_opts(opts)
        hosts = self._premul([_host(t) for t in tensors], factor)
        # gloo's all_reduce takes tensors of one shape: one flat buffer per dtype
        for dtype in dict.fromkeys(h.dtype for h in hosts):
            group = [h for h in hosts if h.dtype == dtype]
            flat = torch.cat([h.reshape(-1) for h in group])
            self._run(self._gloo.allreduce([flat], o))
            for h, part in zip(group, flat.split([h.numel() for h in group])):
                h.copy_(part.view_as(h))
        return self._finish(tensors, hosts, avg)

    def broadcast(self, tensors, opts=None):
        opts = opts or dist.BroadcastOptions()
        self._agree("broadcast", tensors)
        hosts = [_host(t) for t in tensors]
        self._run(self._gloo.broadcast(hosts, opts))
        return self._finish(tensors, hosts)

    def reduce(self, tensors, opts=None):
        opts = opts or dist.ReduceOptions()
        self._agree("reduce", tensors)
        o, avg, factor = self._reduce_opts(opts, dist.ReduceOptions)
        hosts = self._premul([_host(t) for t in tensors], factor)
        self._run(self._gloo.reduce(hosts, o))
        if self._rank != opts.rootRank:
            return _DoneWork(tensors)  # only the root's tensor is defined after a reduce
        return self._finish(tensors, hosts, avg)

    def allgather(self, output_tensors, input_tensors, opts=None):
        opts = opts or dist.AllgatherOptions()
        self._agree("all_gather", list(input_tensors) + _flat(output_tensors))
        hosts_out = [[torch.empty_like(t, device="cpu") for t in ts] for ts in output_tensors]
        hosts_in = [_host(t) for t in input_tensors]
        self._run(self._gloo.allgather(hosts_out, hosts_in, opts))
        self._finish(_flat(output_tensors), _flat(hosts_out))
        return _DoneWork(output_tensors)

    def _allgather_base(self, output, input, opts=None):
        opts = opts or dist.AllgatherOptions()
        self._agree("all_gather", [input, output])
        host_out = torch.empty_like(output, device="cpu")
        self._run(self._gloo._allgather_base(host_out, _host(input), opts))
        return self._finish([output], [host_out])

    def allgather_into_tensor_coalesced(self, outputs, inputs, opts=None):
        for o, i in zip(outputs, inputs):
            self._allgather_base(o, i, opts)
        return _DoneWork(outputs)

    def reduce_scatter(self, output_tensors, input_tensors, opts=None):
        opts = opts or dist.ReduceScatterOptions()
        self._agree("reduce_scatter", list(output_tensors) + _flat(input_tensors))
        # as a reduce of each chunk list through allreduce, then the own chunk
        o, avg, factor = self._allreduce_opts(opts)
        results = []
        for out, ins in zip(output_tensors, input_tensors):
            stacked = self._premul([torch.stack([_host(t) for t in ins])], factor)[0]
            self._run(self._gloo.allreduce([stacked], o))
            results.append((out, stacked[self._rank]))
        for out, h in results:
            self._finish([out], [h], avg)
        return _DoneWork(output_tensors)

    def _reduce_scatter_base(self, output, input, opts=None):
        opts = opts or dist.ReduceScatterOptions()
        chunks = list(input.chunk(self._size))
        return self.reduce_scatter([output], [chunks], opts)

    def reduce_scatter_tensor_coalesced(self, outputs, inputs, opts=None):
        for o, i in zip(outputs, inputs):
            self._reduce_scatter_base(o, i, opts)
        return _DoneWork(outputs)

    def gather(self, output_tensors, input_tensors, opts=None):
        opts = opts or dist.GatherOptions()
        hosts_out = [[torch.empty_like(t, device="cpu") for t in ts] for ts in output_tensors]
        self._run(self._gloo.gather(hosts_out, [_host(t) for t in input_tensors], opts))
        if self._rank == opts.rootRank:
            self._finish(_flat(output_tensors), _flat(hosts_out))
        return _DoneWork(output_tensors)

    def scatter(self, output_tensors, input_tensors, opts=None):
        opts = opts or dist.ScatterOptions()
        hosts_out = [torch.empty_like(t, device="cpu") for t in output_tensors]
        hosts_in = [[_host(t) for t in ts] for ts in input_tensors]
        self._run(self._gloo.scatter(hosts_out, hosts_in, opts))
        return self._finish(output_tensors, hosts_out)

    def alltoall_base(self, output, input, output_split_sizes, input_split_sizes, opts=None):
        opts = opts or dist.AllToAllOptions()
        host_out = torch.empty_like(output, device="cpu")
        self._run(self._gloo.alltoall_base(host_out, _host(input), output_split_sizes, input_split_sizes, opts))
        return self._finish([output], [host_out])

    def alltoall(self, output_tensors, input_tensors, opts=None):
        opts = opts or dist.AllToAllOptions()
        hosts_out = [torch.empty_like(t, device="cpu") for t in output_tensors]
        self._run(self._gloo.alltoall(hosts_out, [_host(t) for t in input_tensors], opts))
        return self._finish(output_tensors, hosts_out)

    # -- coalescing (dist._coalescing_manager(device=...), batch_isend_irecv) --
    # Collectives complete before they return; point-to-point ops stay in
    # flight, so a block's Work waits for those issued inside it.

    def start_coalescing(self):
        self._coalesced = []

    def end_coalescing(self):
        works, self._coalesced = getattr(self, "_coalesced", None) or [], None
        return _GroupWork(works)

    def _in_flight(self, work):
        if getattr(self, "_coalesced", None) is not None:
            self._coalesced.append(work)
        return work

    def send(self, tensors, dst_rank, tag=0):
        hosts = [_host(t) for t in tensors]  # waits for the work producing them
        return self._in_flight(_PendingWork(self._gloo.send(hosts, dst_rank, tag), tensors))

    def _recv_work(self, tensors, hosts, gloo_work):
        return self._in_flight(_PendingWork(gloo_work, tensors, lambda: self._finish(tensors, hosts)))

    def recv(self, tensors, src_rank, tag=0):
        hosts = [torch.empty_like(t, device="cpu") for t in tensors]
        return self._recv_work(tensors, hosts, self._gloo.recv(hosts, src_rank, tag))

    def recv_anysource(self, tensors, tag=0):
        hosts = [torch.empty_like(t, device="cpu") for t in tensors]
        return self._recv_work(tensors, hosts, self._gloo.recv_anysource(hosts, tag))

    def barrier(self, opts=None):
        torch.tpu.synchronize()
        self._run(self._gloo.barrier(opts or dist.BarrierOptions()))
        return _DoneWork([])


def _create(store, rank, size, timeout):
    return TpuBackend(store, rank, size, timeout)


def install() -> None:
    """Registers the 'tpu' c10d backend (idempotent; needs torch.distributed)."""
    if not dist.is_available() or BACKEND_NAME in dist.Backend.backend_list:
        return
    dist.Backend.register_backend(BACKEND_NAME, _create, devices=["tpu"])


# torch 2.14's canonical names for the single-buffer collectives (the c10d
# trampoline forwards these; the older names stay for older callers).
TpuBackend.all_gather_single = TpuBackend._allgather_base
TpuBackend.all_gather_single_coalesced = TpuBackend.allgather_into_tensor_coalesced
TpuBackend.reduce_scatter_single = TpuBackend._reduce_scatter_base
TpuBackend.reduce_scatter_single_coalesced = TpuBackend.reduce_scatter_tensor_coalesced
TpuBackend.all_to_all_single = TpuBackend.alltoall_base
