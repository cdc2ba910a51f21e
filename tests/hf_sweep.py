"""make test-hf: every Transformers architecture of the auto mappings, tiny, on 'tpu' vs CPU.

    python hf_sweep.py [--families causal_lm,masked_lm,...] [--only llama,gpt2] [--json out.json]

For each architecture of the chosen auto mappings, a tiny config is made from
the architecture's default one (widths, depths, heads, vocab, experts shrunk by
name, sub-configs too), the model is built on CPU with a fixed seed, copied to
'tpu', and these stages are compared with the CPU run:

  forward   logits (or the first output) equal within f32 tolerance
  backward  every parameter's gradient of the same scalar, within tolerance
  generate  greedy decoding, 6 new tokens, identical ids (causal LMs and seq2seq)
  bf16      forward of the bf16 model, within bf16 tolerance of CPU's bf16 run, or
            no further from the f32 result than CPU's bf16 run is

An architecture whose tiny config does not build or run on CPU is counted as
"no tiny config" (that is the sweep's limit, not the backend's). A crash of the
process is caught (each family runs in a worker process that is restarted past
the architecture it died on) and counted as a failure. Prints pass counts per
stage and family, and each failure's first line.
"""
from __future__ import annotations

import argparse
import copy
import json
import os
import subprocess
import sys
import tempfile
import time
import traceback

FAMILIES = {
    "causal_lm": "MODEL_FOR_CAUSAL_LM_MAPPING_NAMES",
    "masked_lm": "MODEL_FOR_MASKED_LM_MAPPING_NAMES",
    "seq2seq": "MODEL_FOR_SEQ_TO_SEQ_CAUSAL_LM_MAPPING_NAMES",
    "seq_cls": "MODEL_FOR_SEQUENCE_CLASSIFICATION_MAPPING_NAMES",
    "image_cls": "MODEL_FOR_IMAGE_CLASSIFICATION_MAPPING_NAMES",
}
STAGES = ("forward", "backward", "generate", "bf16")

# Attribute name -> tiny value, applied wherever a config (or a sub-config) has it.
TINY = {
    "vocab_size": 128, "hidden_size": 32, "d_model": 32, "n_embd": 32, "embed_dim": 32, "dim": 32,
    "intermediate_size": 64, "ffn_dim": 64, "d_ff": 64, "encoder_ffn_dim": 64, "decoder_ffn_dim": 64,
    "n_inner": 64, "hidden_dim": 64, "moe_intermediate_size": 32, "shared_expert_intermediate_size": 32,
    "num_hidden_layers": 2, "num_layers": 2, "n_layer": 2, "n_layers": 2, "encoder_layers": 2,
    "decoder_layers": 2, "num_decoder_layers": 2,
    "num_attention_heads": 4, "n_head": 4, "n_heads": 4, "num_heads": 4, "encoder_attention_heads": 4,
    "decoder_attention_heads": 4, "num_key_value_heads": 2, "head_dim": 8, "d_kv": 8,
    "num_experts": 4, "num_local_experts": 4, "n_routed_experts": 4, "num_experts_per_tok": 2,
    "max_position_embeddings": 128, "n_positions": 128,
    "kv_lora_rank": 16, "q_lora_rank": 16, "qk_nope_head_dim": 8, "qk_rope_head_dim": 8, "v_head_dim": 8,
    "image_size": 32, "patch_size": 8, "num_channels": 3, "num_groups": 4,
}
# Per-stage lists of vision backbones (any number of stages): name -> value of stage i.
TINY_STAGES = {"hidden_sizes": lambda i: 8 * 2 ** i, "embed_dims": lambda i: 8 * 2 ** i, "depths": lambda i: 1,
               "num_heads": lambda i: 2 ** i}
BATCH, SEQ, NEW_TOKENS = 2, 8, 6


def tiny_kwargs(cfg, stages=True, layer_kinds=True, mha=False):
    kw = {}
    for name, value in TINY.items():
        if not hasattr(cfg, name):
            continue
        old = getattr(cfg, name)
        if isinstance(old, (list, tuple)):
            continue
        kw[name] = value
    if mha and "num_key_value_heads" in kw:  # multi-head latent attention wants as many kv heads as heads
        kw["num_key_value_heads"] = kw.get("num_attention_heads", kw["num_key_value_heads"])
    staged = False
    for name, stage in (TINY_STAGES.items() if stages else ()):
        old = getattr(cfg, name, None)
        if isinstance(old, (list, tuple)) and 1 <= len(old) <= 8 and all(isinstance(v, int) for v in old):
            kw[name] = [stage(i) for i in range(len(old))]
            staged = True
    if staged:  # a backbone's depth is its number of stages (ConvNeXt aliases num_hidden_layers to it)
        for name in ("num_hidden_layers", "num_layers"):
            kw.pop(name, None)
        if "image_size" in kw:  # room for every stage's downsampling
            kw["image_size"] = 64
    for name in ("pad_token_id", "bos_token_id", "eos_token_id", "decoder_start_token_id"):
        if hasattr(cfg, name):
            kw[name] = {"pad_token_id": 0, "bos_token_id": 1, "eos_token_id": 2, "decoder_start_token_id": 1}[name]
    if getattr(cfg, "is_encoder_decoder", False):
        kw["decoder_start_token_id"] = 1
    # Per-layer lists sized to the default depth (layer types of hybrid models,
    # per-layer MoE choices) keep one layer of each kind they name: the depth
    # becomes the first layer of each kind (at least two layers).
    depth_key = next((k for k in ("num_hidden_layers", "num_layers") if k in kw), None)
    old_layers = getattr(cfg, depth_key, None) if depth_key else None
    if isinstance(old_layers, int) and layer_kinds:
        per_layer = {name: old for name, old in vars(cfg).items()
                     if name not in kw and isinstance(old, list) and len(old) == old_layers and old_layers > 2}
        keep = {0, 1}
        for old in per_layer.values():
            seen = set()
            for i, v in enumerate(old):
                if repr(v) not in seen:
                    seen.add(repr(v))
                    keep.add(i)
        keep = sorted(keep)
        if per_layer:
            kw[depth_key] = len(keep)
        for name, old in per_layer.items():
            kw[name] = [old[i] for i in keep]
    for name, sub in vars(cfg).items():
        if hasattr(sub, "to_dict") and hasattr(sub, "model_type"):
            kw[name] = {**sub.to_dict(), **tiny_kwargs(sub, stages, layer_kinds, mha)}
    return kw


def build(family, model_type, stages=True, layer_kinds=True, mha=False):
    import torch
    import transformers
    from transformers.models.auto import configuration_auto, modeling_auto
    cls_name = getattr(modeling_auto, FAMILIES[family])[model_type]
    if isinstance(cls_name, (list, tuple)):
        cls_name = cls_name[0]
    cls = getattr(transformers, cls_name)
    config_cls = getattr(transformers, configuration_auto.CONFIG_MAPPING_NAMES[model_type])
    default = config_cls()
    cfg = config_cls(**tiny_kwargs(default, stages, layer_kinds, mha))
    if family == "seq_cls":
        cfg.num_labels = 3
    torch.manual_seed(0)
    model = cls(cfg).eval()
    # Weights a model initialises to one constant (zero routers, unit norms) make
    # ties, where topk/argmax may pick any of the equal indices (CPU and CUDA pick
    # differently): a little noise makes every comparison exact-or-wrong.
    with torch.no_grad():
        for p in model.parameters():
            if p.numel() > 1 and p.is_floating_point() and bool((p == p.flatten()[0]).all()):
                p.add_(torch.randn(p.shape, dtype=p.dtype) * 0.02)
    return model, cfg


def inputs(family, cfg, device):
    import torch
    g = torch.Generator().manual_seed(0)
    if family == "image_cls":
        size = getattr(cfg, "image_size", 32)
        size = size[0] if isinstance(size, (list, tuple)) else size
        chans = getattr(cfg, "num_channels", 3)
        return {"pixel_values": torch.randn(BATCH, chans, size, size, generator=g).to(device)}
    vocab = getattr(cfg, "vocab_size", None) or getattr(getattr(cfg, "text_config", None), "vocab_size", 128)
    ids = torch.randint(3, min(vocab, 128), (BATCH, SEQ), generator=g)
    kw = {"input_ids": ids.to(device)}
    if family == "seq2seq":
        kw["decoder_input_ids"] = torch.randint(3, min(vocab, 128), (BATCH, 4), generator=g).to(device)
    return kw


def first_output(out):
    import torch
    if hasattr(out, "logits") and out.logits is not None:
        return out.logits
    for v in (out.values() if hasattr(out, "values") else out):
        if isinstance(v, torch.Tensor):
            return v
    raise RuntimeError("no tensor output")


def close(a, b, rtol, atol):
    import torch
    a, b = a.detach().float().cpu(), b.detach().float().cpu()
    if a.shape != b.shape:
        return f"shape {tuple(b.shape)} vs CPU {tuple(a.shape)}"
    if not torch.allclose(a, b, rtol=rtol, atol=atol, equal_nan=True):
        scale = a.abs().max().item()
        return f"max diff {(a - b).abs().max().item():.3g} (CPU max {scale:.3g})"
    return None


def scalar(out):
    import torch
    y = first_output(out).float()
    w = torch.linspace(-1, 1, y.numel(), dtype=torch.float32).reshape(y.shape).to(y.device)
    return (y * w).sum()


def run_arch(family, model_type):
    """-> {"status": "ok"|"no tiny config", stage: None (pass) | "error text"}"""
    import torch
    r = {"family": family, "arch": model_type}
    first_error = None
    ways = [(True, True, False), (True, True, True), (False, True, False), (True, False, False), (False, False, False)]
    for stages, layer_kinds, mha in ways:
        try:  # the first way of shrinking whose model runs on CPU
            ref, cfg = build(family, model_type, stages, layer_kinds, mha)
            with torch.no_grad():
                ref_out = first_output(ref(**inputs(family, cfg, "cpu")))
            break
        except Exception as e:  # the sweep's tiny config, not the backend
            first_error = first_error or e
    else:
        r["status"] = "no tiny config"
        msg = str(first_error).splitlines()[0][:160] if str(first_error) else ""
        r["why"] = f"{type(first_error).__name__}: {msg}"
        return r
    r["status"] = "ok"
    stages = {}

    def stage(name, fn):
        try:
            stages[name] = fn()
        except Exception as e:
            msg = str(e).splitlines()[0][:240] if str(e) else ""
            stages[name] = f"{type(e).__name__}: {msg}"

    model = copy.deepcopy(ref).to("tpu")

    def forward():
        with torch.no_grad():
            out = first_output(model(**inputs(family, cfg, "tpu")))
            return close(ref_out, out, 1e-3, 1e-4 * max(1.0, ref_out.abs().max().item()))

    def backward():
        ref.zero_grad(), model.zero_grad()
        try:
            scalar(ref(**inputs(family, cfg, "cpu"))).backward()
        except Exception:
            return "n/a"  # not with this tiny config, on CPU either
        scalar(model(**inputs(family, cfg, "tpu"))).backward()
        ref_params = dict(ref.named_parameters())
        for name, p in model.named_parameters():
            q = ref_params[name]
            if (q.grad is None) != (p.grad is None):
                return f"{name}: grad is None on {'CPU' if q.grad is None else 'tpu'} only"
            if q.grad is not None:
                why = close(q.grad, p.grad, 2e-3, 1e-4 * max(1.0, q.grad.abs().max().item()))
                if why:
                    return f"{name}: {why}"
        return None

    def generate():
        if family not in ("causal_lm", "seq2seq"):
            return "n/a"
        kw = dict(max_new_tokens=NEW_TOKENS, do_sample=False, min_new_tokens=NEW_TOKENS)
        ids_cpu = inputs(family, cfg, "cpu")["input_ids"]
        try:
            a = ref.generate(input_ids=ids_cpu, **kw)
        except Exception:
            return "n/a"  # not with this tiny config, on CPU either
        b = model.generate(input_ids=ids_cpu.to("tpu"), **kw)
        return None if torch.equal(a, b.cpu()) else f"ids differ: {b.cpu().tolist()} vs CPU {a.tolist()}"

    def bf16():
        ref16, m16 = copy.deepcopy(ref).to(torch.bfloat16), copy.deepcopy(ref).to("tpu", torch.bfloat16)

        def cast(kw):
            return {k: v.to(torch.bfloat16) if v.is_floating_point() else v for k, v in kw.items()}
        with torch.no_grad():
            try:
                a = first_output(ref16(**cast(inputs(family, cfg, "cpu"))))
            except Exception:
                return "n/a"  # CPU has no bf16 kernel for some op of it
            b = first_output(m16(**cast(inputs(family, cfg, "tpu"))))
        if close(a, b, 0.1, 0.05 * max(1.0, a.float().abs().max().item())) is None:
            return None
        # Some models are ill-conditioned in bf16 (BiT's weight standardisation): then
        # 'tpu' passes when it is no further from the f32 result than CPU's bf16 run.
        err_cpu = (a.float() - ref_out).abs().max().item()
        err_tpu = (b.float().cpu() - ref_out).abs().max().item()
        if err_tpu <= 1.5 * err_cpu:
            return None
        return f"bf16 error {err_tpu:.3g} from the f32 result, CPU's bf16 error {err_cpu:.3g}"

    stage("forward", forward)
    stage("backward", backward)
    stage("generate", generate)
    stage("bf16", bf16)
    r.update(stages)
    return r


def worker(family, archs, out_path):
    import warnings
    warnings.filterwarnings("ignore")
    import torch_tpu  # noqa: F401
    from transformers.utils import logging as hf_logging
    hf_logging.set_verbosity_error()
    for arch in archs:
        with open(out_path, "a") as f:
            f.write(json.dumps({"family": family, "arch": arch, "started": True}) + "\n")
        t0 = time.time()
        try:
            r = run_arch(family, arch)
        except Exception as e:
            r = {"family": family, "arch": arch, "status": "ok",
                 "forward": f"{type(e).__name__}: {traceback.format_exc().splitlines()[-1][:200]}"}
        r["seconds"] = round(time.time() - t0, 1)
        with open(out_path, "a") as f:
            f.write(json.dumps(r) + "\n")


def sweep(families, only, timeout, jobs):
    from concurrent.futures import ThreadPoolExecutor
    with ThreadPoolExecutor(max_workers=jobs) as pool:  # each family in its own worker process
        per_family = list(pool.map(lambda f: sweep_family(f, only, timeout), families))
    return [r for rs in per_family for r in rs]


def sweep_family(family, only, timeout):
    from transformers.models.auto import modeling_auto
    results = []
    archs = [a for a in getattr(modeling_auto, FAMILIES[family]) if not only or a in only]
    done = set()
    while len(done) < len(archs):
        todo = [a for a in archs if a not in done]
        with tempfile.NamedTemporaryFile("r", suffix=".jsonl", delete=False) as tmp:
            path = tmp.name
        cmd = [sys.executable, __file__, "--worker", family, "--archs", ",".join(todo), "--out", path]
        try:
            subprocess.run(cmd, timeout=timeout, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        except subprocess.TimeoutExpired:
            died = f"worker timed out after {timeout} s"
        else:
            died = "process died (crash)"
        started = None
        for line in open(path):
            rec = json.loads(line)
            if rec.get("started"):
                started = rec["arch"]
                continue
            started = None
            done.add(rec["arch"])
            results.append(rec)
            report(rec)
        os.unlink(path)
        if started is not None:  # the worker died inside this architecture
            rec = {"family": family, "arch": started, "status": "ok", "forward": died}
            done.add(started)
            results.append(rec)
            report(rec)
    return results


def report(rec):
    if rec["status"] != "ok":
        print(f"  {rec['family']:9s} {rec['arch']:28s} no tiny config ({rec.get('why', '')[:90]})", flush=True)
        return
    fails = [f"{s}: {rec[s]}" for s in STAGES if s in rec and rec[s] not in (None, "n/a")]
    line = "ok" if not fails else "FAIL " + " | ".join(f[:160] for f in fails)
    print(f"  {rec['family']:9s} {rec['arch']:28s} {line}  ({rec.get('seconds', '?')} s)", flush=True)


def summary(results):
    print("\nper family: architectures with a tiny config, then passes per stage")
    print(f"  {'family':10s} {'archs':>5s} {'tiny':>5s} " + " ".join(f"{s:>9s}" for s in STAGES))
    for family in dict.fromkeys(r["family"] for r in results):
        rs = [r for r in results if r["family"] == family]
        ok = [r for r in rs if r["status"] == "ok"]
        cells = []
        for s in STAGES:
            applicable = [r for r in ok if r.get(s, "missing") != "n/a"]
            passed = [r for r in applicable if s in r and r[s] is None]
            cells.append(f"{len(passed)}/{len(applicable)}")
        print(f"  {family:10s} {len(rs):5d} {len(ok):5d} " + " ".join(f"{c:>9s}" for c in cells))


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--families", default=",".join(FAMILIES))
    p.add_argument("--only", default="", help="comma-separated model types")
    p.add_argument("--json", default="", help="write every result here")
    p.add_argument("--timeout", type=int, default=3600, help="seconds per worker process")
    p.add_argument("--jobs", type=int, default=2, help="families swept at once")
    p.add_argument("--worker", help=argparse.SUPPRESS)
    p.add_argument("--archs", help=argparse.SUPPRESS)
    p.add_argument("--out", help=argparse.SUPPRESS)
    args = p.parse_args()
    if args.worker:
        worker(args.worker, args.archs.split(","), args.out)
        return
    t0 = time.time()
    only = set(filter(None, args.only.split(",")))
    results = sweep(args.families.split(","), only, args.timeout, args.jobs)
    summary(results)
    print(f"\n{len(results)} architectures in {time.time() - t0:.0f} s")
    if args.json:
        with open(args.json, "w") as f:
            json.dump(results, f, indent=1)


if __name__ == "__main__":
    main()
