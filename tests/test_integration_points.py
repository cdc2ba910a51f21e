"""Smaller accelerator integration points (issue #16, items 6 and 7), each
against CPU/CUDA semantics: generators of another device are refused, device
capability, PackedSequence.tpu(), triu/tril_indices, and the fused LSTM/GRU
cells behind nn.LSTM/GRU/LSTMCell/GRUCell (forward and every gradient vs CPU,
in Strict, Debug and DeferAndFuse)."""
import pytest
import torch
import torch.nn as nn

from _helpers import DEV, make_tensor, tpu_only

pytestmark = tpu_only

MODES = ["strict", "debug", "defer"]


def in_mode(mode):
    from torch_tpu.execution_mode import EagerMode, eager_mode
    return eager_mode(EagerMode[{"strict": "STRICT", "debug": "DEBUG", "defer": "DEFER_AND_FUSE"}[mode]])


@pytest.mark.parametrize("draw", [
    lambda g: torch.randn(3, device=DEV, generator=g),
    lambda g: torch.empty(3, device=DEV).normal_(generator=g),
    lambda g: torch.empty(3, device=DEV).uniform_(generator=g),
    lambda g: torch.bernoulli(torch.full((3,), 0.5, device=DEV), generator=g),
    lambda g: torch.multinomial(torch.ones(4, device=DEV), 2, generator=g),
    lambda g: torch.randperm(5, device=DEV, generator=g),
], ids=["randn", "normal_", "uniform_", "bernoulli", "multinomial", "randperm"])
def test_a_cpu_generator_is_refused_as_on_cuda(draw):
    with pytest.raises(RuntimeError, match="Expected a 'tpu' device type for generator but found 'cpu'"):
        draw(torch.Generator())
    # a tpu generator is fine, and reproducible
    a = draw(torch.Generator(DEV).manual_seed(3)).cpu()
    b = draw(torch.Generator(DEV).manual_seed(3)).cpu()
    assert torch.equal(a, b)


@pytest.mark.filterwarnings("ignore:.*quantized tensor creation")
def test_device_capability_lists_exactly_the_dtypes_tensors_can_have():
    caps = torch.accelerator.get_device_capability(DEV)["supported_dtypes"]
    candidates = [torch.float32, torch.float64, torch.float16, torch.bfloat16, torch.int8, torch.int16,
                  torch.int32, torch.int64, torch.uint8, torch.bool, torch.complex64, torch.complex128,
                  torch.float8_e4m3fn, torch.float8_e5m2, torch.quint8, torch.qint8]
    for dt in candidates:
        try:
            torch.zeros(2, dtype=dt).to(DEV).cpu()
            ok = True
        except (RuntimeError, NotImplementedError, TypeError):
            ok = False
        assert (dt in caps) == ok, dt


def test_packed_sequence_moves_to_tpu():
    x = make_tensor((3, 5, 4))
    packed = nn.utils.rnn.pack_padded_sequence(x, [5, 3, 2], batch_first=True)
    moved = packed.tpu()
    assert moved.is_tpu and moved.data.device.type == DEV
    lstm = nn.LSTM(4, 6, batch_first=True)
    ref, _ = nn.utils.rnn.pad_packed_sequence(lstm(packed)[0], batch_first=True)
    out, _ = nn.utils.rnn.pad_packed_sequence(lstm.to(DEV)(moved)[0], batch_first=True)
    torch.testing.assert_close(out.cpu(), ref, atol=1e-5, rtol=1e-5)


@pytest.mark.parametrize("fn", ["triu_indices", "tril_indices"])
@pytest.mark.parametrize("row,col,offset", [(3, 3, 0), (4, 6, 1), (6, 4, -2), (5, 5, 9), (5, 5, -9), (0, 4, 0),
                                            (1, 1, 0), (7, 3, 2)])
def test_triangle_indices_match_cpu(fn, row, col, offset):
    ref = getattr(torch, fn)(row, col, offset)
    got = getattr(torch, fn)(row, col, offset, device=DEV)
    assert got.device.type == DEV and got.dtype == ref.dtype
    assert torch.equal(got.cpu(), ref)
    got32 = getattr(torch, fn)(row, col, offset, dtype=torch.int32, device=DEV)
    assert torch.equal(got32.cpu(), ref.int())


RNNS = {
    "lstm": lambda: nn.LSTM(5, 7, num_layers=2, bidirectional=True),
    "lstm_nobias_batch_first": lambda: nn.LSTM(5, 7, bias=False, batch_first=True),
    "gru": lambda: nn.GRU(5, 7, num_layers=2, bidirectional=True),
    "gru_nobias": lambda: nn.GRU(5, 7, bias=False),
    "lstm_cell": lambda: nn.LSTMCell(5, 7),
    "gru_cell": lambda: nn.GRUCell(5, 7, bias=False),
}


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("name", list(RNNS))
def test_recurrent_layers_match_cpu_forward_and_backward(name, mode):
    torch.manual_seed(0)
    cpu = RNNS[name]()
    dev = RNNS[name]()
    dev.load_state_dict(cpu.state_dict())
    dev = dev.to(DEV)
    x = make_tensor((4, 3, 5) if "cell" not in name else (3, 5), seed=1, requires_grad=True)
    xd = x.detach().to(DEV).requires_grad_()

    def run(m, inp):
        out = m(inp)
        if isinstance(out, tuple):  # (output, h) or (h, c)
            flat = [out[0]] + (list(out[1]) if isinstance(out[1], tuple) else [out[1]])
        else:
            flat = [out]
        loss = sum((t * torch.arange(t.numel(), device=t.device).reshape(t.shape).sin()).sum() for t in flat)
        loss.backward()
        return [t.detach() for t in flat]

    ref = run(cpu, x)
    with in_mode(mode):
        got = run(dev, xd)
        got = [t.cpu() for t in got]
    for g, r in zip(got, ref):
        torch.testing.assert_close(g, r, atol=1e-5, rtol=1e-4)
    torch.testing.assert_close(xd.grad.cpu(), x.grad, atol=1e-5, rtol=1e-4)
    for (n, p), (_, q) in zip(cpu.named_parameters(), dev.named_parameters()):
        torch.testing.assert_close(q.grad.cpu(), p.grad, atol=1e-5, rtol=1e-4, msg=n)


# --- processes: a clear error, never a hang ---

def _receive(q, out):
    try:
        out.put(("received", q.get(timeout=120)))
    except Exception as e:  # noqa: BLE001  (the error travels back to the test)
        out.put(("raised", f"{type(e).__name__}: {e}"))


def test_sending_a_tpu_tensor_to_another_process_fails_clearly():
    import torch.multiprocessing as mp
    ctx = mp.get_context("spawn")
    # pickled in the caller: the caller gets the error
    a, b = ctx.Pipe()
    with pytest.raises(RuntimeError, match="cannot be sent to another process.*tensor.cpu"):
        a.send(torch.ones(3, device=DEV))
    with pytest.raises(RuntimeError, match="cannot be sent"):
        a.send(torch.ones(3, device=DEV).untyped_storage())
    # mp.Queue pickles in a feeder thread: the receiver raises instead of waiting forever
    q, out = ctx.Queue(), ctx.Queue()
    p = ctx.Process(target=_receive, args=(q, out))
    p.start()
    try:
        q.put(torch.ones(3, device=DEV))
        kind, what = out.get(timeout=180)
    finally:
        p.join(timeout=60)
        if p.is_alive():
            p.kill()
    assert kind == "raised" and "cannot be sent to another process" in what, what
    # CPU tensors still travel as before
    a.send(torch.arange(3))
    assert b.poll(30) and torch.equal(b.recv(), torch.arange(3))


# DLPack: tests/test_dlpack.py (a round trip, not an error any more).


# --- pinned host memory (issue #16, item 4) ----------------------------------

def test_pin_memory_and_copies_from_pinned_memory():
    x = make_tensor((64, 32))
    assert not x.is_pinned()
    p = x.pin_memory()
    assert p.is_pinned() and p[5:].is_pinned() and p.t().is_pinned()
    assert p.data_ptr() != x.data_ptr() and torch.equal(p, x)
    assert torch.empty(16, pin_memory=True).is_pinned()
    d = x.to(DEV, non_blocking=True)
    x.add_(1.0)  # from pageable memory the copy is a snapshot taken before .to returned
    torch.testing.assert_close(d.cpu(), p)
    d = p.to(DEV, non_blocking=True)
    torch.tpu.synchronize()  # from pinned memory it may still be running until a sync, as on CUDA
    p.fill_(3.0)
    torch.testing.assert_close(d.cpu(), x - 1.0)
    x.sub_(1.0)
    # device -> pinned host and back
    h = torch.empty(64, 32).pin_memory()
    h.copy_(d, non_blocking=True)
    torch.tpu.synchronize()
    torch.testing.assert_close(h, x)
    del p, h  # freed blocks are forgotten
    assert not torch.empty(64, 32).is_pinned()


def _async_uploads():
    return torch.tpu.compile_stats()["host_to_device_async"]


@pytest.mark.parametrize("mode", MODES)
def test_non_blocking_copy_from_pinned_memory_is_asynchronous(mode):
    # Only a dense same-dtype copy from pinned memory with non_blocking=True
    # runs in the background; every other copy is a snapshot.
    x = make_tensor((1 << 21,))  # 8 MB: large enough for the plugin to copy off the calling thread
    p = x.pin_memory()
    with in_mode(mode):
        n = _async_uploads()
        x.to(DEV, non_blocking=True)
        p.to(DEV)
        p.to(DEV, dtype=torch.float64, non_blocking=True)
        p[::2].to(DEV, non_blocking=True)
        assert _async_uploads() == n
        d = p.to(DEV, non_blocking=True)
        assert _async_uploads() == n + 1
        y = (d * 2).sum()  # ordered after the copy by the device
        torch.testing.assert_close(y.cpu(), (x * 2).sum())
        # An event recorded after the copy covers it: once it is done the block may change.
        d = p.to(DEV, non_blocking=True)
        e = torch.Event(device=DEV)
        e.record()
        e.synchronize()
        p.neg_()
        torch.testing.assert_close(d.cpu(), x)


def test_a_pinned_block_freed_during_its_copy_waits_for_it():
    base = torch.tpu.host_memory_stats()["allocated_bytes.current"]
    x = make_tensor((1 << 21,))
    outs = []
    for _ in range(4):
        p = x.pin_memory()
        outs.append(p.to(DEV, non_blocking=True))
        del p  # the copy may still read the block: it must not go back to the system yet
    torch.tpu.synchronize()
    for d in outs:
        torch.testing.assert_close(d.cpu(), x)
    stats = torch.tpu.host_memory_stats()
    assert stats["allocated_bytes.current"] == base
    assert stats["num_host_alloc"] >= 4 and stats["num_host_free"] >= 4


def test_a_copy_on_a_side_stream_is_ordered_by_wait_stream():
    x = make_tensor((1 << 20,))
    p = x.pin_memory()
    side = torch.tpu.Stream()
    w = torch.ones(1 << 20, device=DEV)
    with torch.tpu.stream(side):
        d = p.to(DEV, non_blocking=True)
    torch.tpu.current_stream().wait_stream(side)
    d.record_stream(torch.tpu.current_stream())
    torch.testing.assert_close((d + w).cpu(), x + 1)


def test_dataloader_pin_memory():
    ds = torch.utils.data.TensorDataset(make_tensor((10, 3)), torch.arange(10))
    batches = list(torch.utils.data.DataLoader(ds, batch_size=4, pin_memory=True))
    assert all(b[0].is_pinned() and b[1].is_pinned() for b in batches)
    got = torch.cat([b[0].to(DEV, non_blocking=True) for b in batches]).cpu()
    torch.testing.assert_close(got, ds.tensors[0])
