"""Child process of tests/test_stress.py: trains the small GPT of issue #13
(2 blocks, width 128, SDPA, tanh-GELU MLP, AdamW) for a few steps in each
requested mode and prints one JSON line per mode: the losses, a digest of the
parameters' bytes after training and of the first step's gradients, and the
largest difference from the CPU run. Run to run, on any load, the digests
must be identical: the device must compute the same bits every time.

usage: python train_repeat.py MODES STEPS   (MODES: comma list of strict,debug,defer,compiled,cpu)
"""
import hashlib
import json
import sys

import torch
import torch.nn as nn
import torch.nn.functional as F


class Block(nn.Module):
    def __init__(self, c=128, h=4):
        super().__init__()
        self.h = h
        self.ln1, self.ln2 = nn.LayerNorm(c), nn.LayerNorm(c)
        self.qkv, self.proj = nn.Linear(c, 3 * c), nn.Linear(c, c)
        self.mlp = nn.Sequential(nn.Linear(c, 4 * c), nn.GELU(approximate="tanh"), nn.Linear(4 * c, c))

    def forward(self, x):
        b, t, c = x.shape
        q, k, v = (z.view(b, t, self.h, c // self.h).transpose(1, 2) for z in self.qkv(self.ln1(x)).split(c, -1))
        att = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        x = x + self.proj(att.transpose(1, 2).reshape(b, t, c))
        return x + self.mlp(self.ln2(x))


class GPT(nn.Module):
    def __init__(self):
        super().__init__()
        self.tok, self.pos = nn.Embedding(512, 128), nn.Embedding(64, 128)
        self.blocks = nn.ModuleList(Block() for _ in range(2))
        self.ln, self.head = nn.LayerNorm(128), nn.Linear(128, 512, bias=False)

    def forward(self, idx):
        x = self.tok(idx) + self.pos(torch.arange(idx.shape[1], device=idx.device))
        for b in self.blocks:
            x = b(x)
        return self.head(self.ln(x))


def digest(tensors):
    h = hashlib.sha256()
    for t in tensors:
        h.update(t.detach().cpu().contiguous().view(torch.uint8).numpy().tobytes())
    return h.hexdigest()[:16]


def train(device, steps, compiled=False):
    torch.manual_seed(0)
    model = GPT().to(device)
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
    gen = torch.Generator().manual_seed(2)

    def step(x, y):
        opt.zero_grad()
        loss = F.cross_entropy(model(x).reshape(-1, 512), y.reshape(-1))
        loss.backward()
        opt.step()
        return loss.detach()

    if compiled:
        step = torch.compile(step, backend="tpu")
    losses, first_grads = [], None
    for s in range(steps):
        idx = torch.randint(0, 512, (8, 65), generator=gen)
        losses.append(step(idx[:, :-1].to(device), idx[:, 1:].to(device)))
        if s == 0:
            first_grads = [p.grad.detach().cpu().clone() for p in model.parameters()]
    params = [p.detach().cpu() for p in model.parameters()]
    return [float(x) for x in losses], params, first_grads


def main():
    modes, steps = sys.argv[1].split(","), int(sys.argv[2])
    ref_losses, ref_params, ref_grads = train("cpu", steps)
    for mode in modes:
        if mode == "cpu":
            losses, params, grads = ref_losses, ref_params, ref_grads
        else:
            import torch_tpu
            from torch_tpu.execution_mode import EagerMode, eager_mode
            name = {"strict": "STRICT", "debug": "DEBUG", "defer": "DEFER_AND_FUSE", "compiled": "STRICT"}[mode]
            with eager_mode(EagerMode[name]):
                losses, params, grads = train("tpu", steps, compiled=mode == "compiled")
            torch_tpu.synchronize()
        worst_grad = max(float(((g - r).abs() / (r.abs() + 1e-3)).max()) for g, r in zip(grads, ref_grads))
        print(json.dumps({
            "mode": mode, "losses": losses, "params": digest(params), "grads": digest(grads),
            "max_rel_grad_diff_vs_cpu": worst_grad,
            "max_param_diff_vs_cpu": max(float((p - r).abs().max()) for p, r in zip(params, ref_params)),
        }), flush=True)


if __name__ == "__main__":
    main()
