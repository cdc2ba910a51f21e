"""torch.distributed on 'tpu' (issue #17): the 'tpu' c10d backend in real
multi-process runs. Each test starts WORLD ranks as separate processes (free
port from the OS, a timeout on every wait); each rank runs the collectives /
training on 'tpu' and the same on CPU through gloo and reports both, and the
test demands they agree (tests/dist/worker.py)."""
import json
import os
import socket
import subprocess
import sys

import pytest

from _helpers import tpu_only

pytestmark = tpu_only

WORKER = os.path.join(os.path.dirname(__file__), "dist", "worker.py")


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def launch(checks, world=2, env=None, timeout=300):
    port = free_port()
    procs = []
    for rank in range(world):
        e = dict(os.environ, RANK=str(rank), WORLD_SIZE=str(world), MASTER_ADDR="127.0.0.1",
                 MASTER_PORT=str(port), TORCH_TPU_CPU_DEVICES="1", **(env or {}))
        procs.append(subprocess.Popen([sys.executable, WORKER, checks], env=e, stdout=subprocess.PIPE,
                                      stderr=subprocess.PIPE, text=True))
    outs = []
    try:
        for p in procs:
            out, err = p.communicate(timeout=timeout)
            outs.append((p.returncode, out, err))
    finally:
        for p in procs:
            if p.poll() is None:
                p.kill()
                p.wait(timeout=30)
    for rank, (rc, out, err) in enumerate(outs):
        assert rc == 0, f"rank {rank} failed:\n{err[-4000:]}"
    return [[json.loads(l) for l in out.splitlines() if l.startswith("{")] for _, out, _ in outs]


def check_all(results, expected):
    for rank, rows in enumerate(results):
        names = [r["check"] for r in rows]
        for name in expected:
            assert any(n.startswith(name) for n in names), (rank, name, names)
        bad = [r for r in rows if not r["ok"]]
        assert not bad, bad


def test_collectives_match_gloo_on_cpu():
    results = launch("collectives")
    check_all(results, ["all_reduce[torch.float32", "all_reduce[torch.bfloat16", "all_reduce[torch.int64",
                        "all_reduce[transposed]", "all_gather", "all_gather_into_tensor", "reduce_scatter_tensor",
                        "reduce_scatter", "broadcast", "reduce", "gather", "scatter", "all_to_all_single",
                        "all_to_all_single[uneven]", "all_to_all", "async_work"])
    assert any(r["check"] == "recv" for r in results[1])


def test_ddp_training_matches_gloo_on_cpu():
    check_all(launch("ddp"), ["ddp"])


def test_default_backend_map_picks_tpu():
    # init_process_group() without a backend: cpu:gloo,tpu:tpu
    check_all(launch("collectives", env={"TTPU_TEST_BACKEND": ""}), ["all_reduce", "all_gather"])


def test_a_dead_rank_gives_the_others_an_error_not_a_hang():
    results = launch("dead_rank", timeout=200)
    row = [r for r in results[0] if r["check"] == "dead_rank"][0]
    assert row["ok"], row
    assert row["seconds"] < 90, row  # within the process group's 60 s timeout (plus slack)


def test_fsdp2_training_matches_data_parallel_on_cpu():
    check_all(launch("fsdp2"), ["fsdp2"])


def test_dtensor_and_tensor_parallel_match_cpu():
    check_all(launch("dtensor"), ["dtensor_matmul", "dtensor_redistribute", "dtensor_sum", "tensor_parallel"])


def test_functional_collectives_eager_deferred_and_compiled():
    check_all(launch("funcol"), ["funcol_all_reduce[eager]", "funcol_all_gather[eager]", "funcol_all_reduce[defer]",
                                 "funcol_all_reduce[compiled]"])


def test_mismatched_shapes_or_dtypes_raise_on_every_rank():
    check_all(launch("mismatch"), ["mismatch_all_reduce[shape]", "mismatch_all_reduce[dtype]",
                                   "mismatch_broadcast[shape]", "mismatch_all_gather_into_tensor[shape]",
                                   "mismatch_then_all_reduce"])


def test_point_to_point_sends_before_receives_and_batches():
    check_all(launch("p2p"), ["p2p[send_first]", "p2p[batch_isend_irecv]"])


def test_premul_sum_and_coalescing_manager():
    check_all(launch("premul_sum,coalesced"), ["premul_sum[all_reduce]", "premul_sum[reduce_scatter_tensor]",
                                               "coalesced[all_reduce]"])


def test_pipeline_parallel_two_stages_match_the_whole_model_on_cpu():
    check_all(launch("pipeline"), ["pipeline[gpipe]", "pipeline[1f1b]"])
