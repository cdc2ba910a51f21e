"""Fine-tune a small Hugging Face causal LM (Llama architecture, built from a
config, nothing downloaded) with a plain PyTorch loop, on CPU and on 'tpu' in
each execution mode, and print step times and losses side by side.

    python examples/finetune_causal_lm.py [--steps 20] [--modes cpu,strict,defer,compiled]

Data: token sequences of a small synthetic "language" (each token mostly
determined by the two before it), so the loss falls visibly in a few steps.
Every mode starts from the same weights and sees the same batches, so its
losses must track CPU's; the step time is the median after the warm-up steps
(which compile: Strict per op, DeferAndFuse per fused step, compiled per graph).
"""
import argparse
import statistics
import time

import torch
import transformers

import torch_tpu  # noqa: F401  (registers 'tpu'; autoload also does)
from torch_tpu.execution_mode import EagerMode, eager_mode

VOCAB, SEQ, BATCH, USED = 512, 64, 8, 64  # the language uses the first USED tokens of the vocabulary


def make_batches(n, seed=0):
    g = torch.Generator().manual_seed(seed)
    table = torch.randint(0, USED, (USED, USED), generator=g)  # next token of (a, b)
    batches = []
    for _ in range(n):
        x = torch.empty(BATCH, SEQ, dtype=torch.long)
        x[:, :2] = torch.randint(0, USED, (BATCH, 2), generator=g)
        noise = torch.rand(BATCH, SEQ, generator=g) < 0.1
        rand = torch.randint(0, USED, (BATCH, SEQ), generator=g)
        for t in range(2, SEQ):
            x[:, t] = torch.where(noise[:, t], rand[:, t], table[x[:, t - 2], x[:, t - 1]])
        batches.append(x)
    return batches


def make_model():
    cfg = transformers.LlamaConfig(vocab_size=VOCAB, hidden_size=128, intermediate_size=344, num_hidden_layers=4,
                                   num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=SEQ,
                                   tie_word_embeddings=True)
    torch.manual_seed(0)
    return transformers.LlamaForCausalLM(cfg)


def finetune(mode, batches, warmup):
    device = "cpu" if mode == "cpu" else "tpu"
    model = make_model().to(device).train()
    opt = torch.optim.AdamW(model.parameters(), lr=3e-3, weight_decay=0.01)

    def step(x):
        loss = model(input_ids=x, labels=x).loss
        loss.backward()
        opt.step()
        opt.zero_grad(set_to_none=True)
        return loss

    if mode == "compiled":
        step = torch.compile(step, backend="tpu")
    eager = {"strict": EagerMode.STRICT, "defer": EagerMode.DEFER_AND_FUSE}.get(mode, EagerMode.STRICT)
    losses, times = [], []
    with eager_mode(eager):
        for i, x in enumerate(batches):
            t0 = time.perf_counter()
            loss = step(x.to(device)).item()  # .item() waits, so the time is the whole step
            times.append(time.perf_counter() - t0)
            losses.append(loss)
    return losses, statistics.median(times[warmup:]), sum(times[:warmup])


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--steps", type=int, default=20)
    p.add_argument("--warmup", type=int, default=3)
    p.add_argument("--modes", default="cpu,strict,defer,compiled")
    args = p.parse_args()
    batches = make_batches(args.steps)
    results = {m: finetune(m, batches, args.warmup) for m in args.modes.split(",")}
    modes = list(results)
    print("step  " + "".join(f"{m:>12s}" for m in modes))
    for i in range(args.steps):
        print(f"{i:4d}  " + "".join(f"{results[m][0][i]:12.4f}" for m in modes))
    base = results.get("cpu")
    print("\nmedian step time after warm-up (first steps, which compile, in brackets):")
    for m in modes:
        _, t, warm = results[m]
        ratio = f"  {t / base[1]:.2f}x CPU" if base else ""
        print(f"  {m:9s} {t * 1e3:8.1f} ms{ratio}   [{warm:.1f} s for {args.warmup} warm-up steps]")
    if base:
        for m in modes:
            diff = max(abs(a - b) for a, b in zip(results[m][0], base[0]))
            print(f"  {m:9s} largest loss difference from CPU: {diff:.2e}")


if __name__ == "__main__":
    main()
