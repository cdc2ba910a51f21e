"""The persistent on-disk compile cache (csrc/runtime/disk_cache.{h,cc}).

Every scenario runs fresh interpreters over its own cache directory
(TORCH_TPU_CACHE_DIR), because the cache only matters across processes:
process 1 compiles a small training step and writes one entry per executable;
a later process finds them, or must refuse them (corrupt, foreign).  The
populated directory is made once per module and copied for each test."""

import hashlib
import json
import os
import shutil
import subprocess
import sys
import textwrap

import pytest

from _helpers import tpu_only

pytestmark = tpu_only

# magic | u32 format | u32 header bytes | 32-byte key | u64 payload bytes | 32-byte sha256
MAGIC = b"TTPUXEC1"
HEADER = 8 + 4 + 4 + 32 + 8 + 32
OLD = 1_000_000_000  # an mtime (2001) older than anything a run writes

# One Strict step and two DeferAndFuse steps (fused graphs are cached too) of
# a small MLP with AdamW; prints losses, a parameter fingerprint and stats.
STEP = """
    import json
    import torch, torch_tpu
    import torch.nn as nn, torch.nn.functional as F
    from torch_tpu.execution_mode import EagerMode, eager_mode
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(12, 16), nn.ReLU(), nn.Linear(16, 3)).to("tpu")
    opt = torch.optim.AdamW(model.parameters(), lr=1e-2)
    data = torch.randn(8, 12).to("tpu")
    target = torch.randint(0, 3, (8,)).to("tpu")
    losses = []
    def step():
        opt.zero_grad()
        loss = F.cross_entropy(model(data), target)
        loss.backward()
        opt.step()
        losses.append(loss.item())
    step()
    with eager_mode(EagerMode.DEFER_AND_FUSE):
        step(); step()
        torch_tpu.sync()
    params = [p.detach().cpu().double().sum().item() for p in model.parameters()]
    print(json.dumps({"losses": losses, "params": params, "compile": torch.tpu.compile_stats(),
                      "cache": torch.tpu.compile_cache_stats(), "graphs": torch_tpu.defer_stats()}))
"""

# Ops with shapes the training step never uses: all new entries.
SMALL = """
    import json
    import torch, torch_tpu
    x = torch.arange(7, dtype=torch.float32).to("tpu")
    y = ((x + 1.5) * x).sum()
    print(json.dumps({"value": y.item(), "compile": torch.tpu.compile_stats(),
                      "cache": torch.tpu.compile_cache_stats()}))
"""


def run(code, cache_dir, cwd=None, **env_overrides):
    """Runs ``code`` in a fresh interpreter over ``cache_dir``; returns its JSON line."""
    import torch_tpu
    env = dict(os.environ)
    env["TORCH_TPU_CPU_DEVICES"] = "2"
    for k in ("TORCH_TPU_CPU_FALLBACK", "TORCH_TPU_CACHE_MAX_BYTES", "TORCH_TPU_CACHE_TEST_CPU_FEATURES",
              "TORCH_TPU_DEFER_AND_FUSE", "TPU_DEFER_AND_FUSE", "XLA_FLAGS"):
        env.pop(k, None)
    env["TORCH_TPU_CACHE_DIR"] = str(cache_dir)
    env.update({k: str(v) for k, v in env_overrides.items()})
    pkg_root = os.path.dirname(os.path.dirname(os.path.abspath(torch_tpu.__file__)))
    env["PYTHONPATH"] = os.pathsep.join([pkg_root] + [p for p in env.get("PYTHONPATH", "").split(os.pathsep) if p])
    res = subprocess.run([sys.executable, "-c", textwrap.dedent(code)], env=env, capture_output=True, text=True,
                         timeout=300, cwd=cwd)
    assert res.returncode == 0, f"subprocess failed ({res.returncode}):\n{res.stderr[-4000:]}"
    lines = [ln for ln in res.stdout.splitlines() if ln.startswith("{")]
    assert lines, f"no result printed; stdout:\n{res.stdout}\nstderr:\n{res.stderr[-4000:]}"
    return json.loads(lines[-1])


def entries(d):
    return sorted(n for n in os.listdir(d) if n.endswith(".xc"))


def parse(path):
    """The header fields of an entry file, checked the way the runtime checks them."""
    data = open(path, "rb").read()
    assert len(data) > HEADER and data[:8] == MAGIC, path
    fmt = int.from_bytes(data[8:12], "little")
    hdr = int.from_bytes(data[12:16], "little")
    key = data[16:48]
    n = int.from_bytes(data[48:56], "little")
    assert (fmt, hdr) == (1, HEADER)
    assert n == len(data) - HEADER
    assert hashlib.sha256(data[HEADER:]).digest() == data[56:88]
    assert key.hex() + ".xc" == os.path.basename(path)
    return data


def set_mtimes(d, names, start, step=0):
    for i, n in enumerate(names):
        t = start + i * step
        os.utime(os.path.join(d, n), (t, t))


@pytest.fixture(scope="module")
def populated(tmp_path_factory):
    """Process 1: a cold cache; every executable it compiles is written."""
    d = tmp_path_factory.mktemp("cache") / "xla"  # the runtime creates it
    out = run(STEP, d)
    cache = out["cache"]
    if cache["supported"] is False:
        pytest.skip(f"the PJRT plugin cannot serialise executables: {cache['unsupported_reason']}")
    n = out["compile"]["compiles"]
    assert n > 0 and out["compile"]["disk_loads"] == 0
    assert out["graphs"]["graphs_executed"] > 0  # fused graphs went through the cache too
    assert cache["enabled"] and cache["dir"] == str(d)
    assert (cache["disk_writes"], cache["disk_misses"], cache["disk_hits"]) == (n, n, 0)
    assert cache["disk_corrupt"] == cache["disk_errors"] == cache["disk_evictions"] == 0
    names = entries(d)
    assert len(names) == n == cache["entries_on_disk"]
    assert sum(os.path.getsize(d / x) for x in names) == cache["bytes_on_disk"]
    for x in names:
        parse(d / x)
    assert not [x for x in os.listdir(d) if x not in names], "temporary files left behind"
    return d, out


def copy_of(populated, tmp_path):
    src, out = populated
    dst = tmp_path / "xla"
    shutil.copytree(src, dst)
    return dst, out


def test_warm_start_compiles_nothing(populated, tmp_path):
    d, first = copy_of(populated, tmp_path)
    names = entries(d)
    set_mtimes(d, names, OLD)
    out = run(STEP, d)
    n = first["compile"]["compiles"]
    assert out["compile"]["compiles"] == 0
    assert out["compile"]["compile_seconds"] == 0
    assert out["compile"]["disk_loads"] == n
    cache = out["cache"]
    assert (cache["disk_hits"], cache["disk_misses"], cache["disk_writes"]) == (n, 0, 0)
    assert cache["disk_corrupt"] == cache["disk_errors"] == 0
    assert cache["fingerprint"] == first["cache"]["fingerprint"]
    # identical numbers, bit for bit
    assert out["losses"] == first["losses"]
    assert out["params"] == first["params"]
    # every hit touched its entry (least-recently-used order)
    assert entries(d) == names
    assert all(os.path.getmtime(d / x) > OLD + 1 for x in names)


def test_corrupt_entries_are_detected_deleted_and_rebuilt(populated, tmp_path):
    d, first = copy_of(populated, tmp_path)
    names = entries(d)
    n = len(names)
    # the first entry: a well-formed file whose payload the plugin must refuse
    data = parse(d / names[0])
    junk = b"torch_tpu test: this is not a serialised executable" * 4
    (d / names[0]).write_bytes(data[:48] + len(junk).to_bytes(8, "little") + hashlib.sha256(junk).digest() + junk)
    # every other entry: damaged in one of five ways
    for i, x in enumerate(names[1:]):
        p = d / x
        data = bytearray(p.read_bytes())
        kind = i % 5
        if kind == 0:
            data = data[:len(data) // 2]  # truncated payload
        elif kind == 1:
            data = data[:10]  # truncated header
        elif kind == 2:
            data[HEADER + len(data[HEADER:]) // 2] ^= 0x5A  # one flipped payload byte
        elif kind == 3:
            data[:8] = b"GARBAGE!"  # bad magic
        else:
            data = b""  # empty file
        p.write_bytes(bytes(data))
    out = run(STEP, d)
    cache = out["cache"]
    assert out["compile"]["compiles"] == n and out["compile"]["disk_loads"] == 0
    assert cache["disk_hits"] == 0
    assert cache["disk_corrupt"] == n - 1
    assert cache["disk_errors"] == 1  # the refused payload
    assert cache["disk_writes"] == n
    assert out["losses"] == first["losses"] and out["params"] == first["params"]
    # all rebuilt: the same names, every file whole and valid again (not
    # byte-identical to process 1's: XLA's serialised output varies per compile)
    assert entries(d) == names
    for x in names:
        parse(d / x)


def test_foreign_entries_are_never_used(populated, tmp_path):
    """A cache made on another host (other CPU features) is ignored: its files
    are never opened (mtime unchanged), everything compiles, new entries are
    written beside the old ones."""
    d, first = copy_of(populated, tmp_path)
    names = entries(d)
    contents = {x: (d / x).read_bytes() for x in names}
    set_mtimes(d, names, OLD)
    out = run(STEP, d, TORCH_TPU_CACHE_TEST_CPU_FEATURES="some-other-cpu avx9000")
    n = len(names)
    cache = out["cache"]
    assert cache["fingerprint"] != first["cache"]["fingerprint"]
    assert out["compile"]["compiles"] == n and out["compile"]["disk_loads"] == 0
    assert (cache["disk_hits"], cache["disk_misses"], cache["disk_writes"]) == (0, n, n)
    assert cache["disk_corrupt"] == cache["disk_errors"] == 0
    assert out["losses"] == first["losses"]
    now = entries(d)
    assert len(now) == 2 * n and set(names) <= set(now)
    for x in names:
        assert (d / x).read_bytes() == contents[x]
        assert os.path.getmtime(d / x) == OLD


def test_size_bound_evicts_least_recently_used(populated, tmp_path):
    d, _ = copy_of(populated, tmp_path)
    names = entries(d)
    # distinct ages in an order unrelated to the names
    order = sorted(names, key=lambda x: hashlib.sha256(x.encode()).digest())
    set_mtimes(d, order, OLD, step=10)
    age = {x: os.path.getmtime(d / x) for x in order}
    bound = sum(os.path.getsize(d / x) for x in names)  # full: any new entry goes over
    out = run(SMALL, d, TORCH_TPU_CACHE_MAX_BYTES=bound)
    assert out["value"] == sum((i + 1.5) * i for i in range(7))
    cache = out["cache"]
    assert cache["max_bytes"] == bound
    assert cache["disk_writes"] > 0 and cache["disk_evictions"] > 0
    assert cache["bytes_on_disk"] <= bound
    now = set(entries(d))
    assert cache["bytes_on_disk"] == sum(os.path.getsize(d / x) for x in now)
    new = now - set(names)
    assert len(new) == cache["disk_writes"]  # what this process wrote is kept
    evicted = [x for x in names if x not in now]
    assert len(evicted) == cache["disk_evictions"]
    # the oldest went first: every untouched survivor is younger than every evicted entry
    survivors = [x for x in names if x in now and os.path.getmtime(d / x) == age[x]]
    assert max(age[x] for x in evicted) < min(age[x] for x in survivors)


def test_disabled_cache(tmp_path):
    # "0" and "" take the same branch (disk_cache.cc configure_locked)
    out = run(SMALL, "0", cwd=tmp_path)
    assert os.listdir(tmp_path) == []  # no directory named "0" (or anything else) appeared
    cache = out["cache"]
    assert cache["enabled"] is False and cache["dir"] == ""
    assert out["compile"]["compiles"] > 0
    assert (cache["disk_hits"], cache["disk_misses"], cache["disk_writes"]) == (0, 0, 0)
    assert cache["entries_on_disk"] == 0


@tpu_only
def test_in_memory_executable_cache_is_bounded():
    # A process that keeps meeting new shapes must not grow without bound:
    # every loaded XLA:CPU executable holds code mappings, and at the kernel's
    # limit (vm.max_map_count, 65530) LLVM fails and the process dies (a
    # 2,000-program fuzz sweep did). Least recently used executables go.
    import torch

    stats = torch.tpu.compile_stats
    before = stats()
    old_capacity = before["cache_capacity"]
    assert old_capacity >= 1024  # the default keeps a training step's executables

    def maps():
        with open("/proc/self/maps") as f:
            return sum(1 for _ in f)

    torch.tpu.set_executable_cache_capacity(16)
    try:
        assert stats()["cached_executables"] <= 16
        for n in range(1, 9):  # warm up the allocator and the plugin's own mappings
            (torch.ones(n, device="tpu") * 3 - 1).sum().item()
        start = maps()
        for n in range(100, 220):
            x = torch.arange(n, dtype=torch.float32, device="tpu")
            assert (x * 3 - 1).sum().item() == 3 * n * (n - 1) / 2 - n
        after = stats()
        assert after["cached_executables"] <= 16
        assert after["cache_evictions"] - before["cache_evictions"] >= 300
        assert maps() - start < 400, (start, maps())  # 360 executables: ~1,800 mappings unbounded
        # an evicted executable comes back (disk cache or a new compile) and computes the same
        x = torch.arange(100, dtype=torch.float32, device="tpu")
        assert (x * 3 - 1).sum().item() == 3 * 4950 - 100
        with pytest.raises(ValueError):
            torch.tpu.set_executable_cache_capacity(0)
    finally:
        torch.tpu.set_executable_cache_capacity(old_capacity)
    assert stats()["cache_capacity"] == old_capacity
