"""Models for the benchmark suite, built from torch.nn only, with synthetic data."""
import torch
import torch.nn as nn
import torch.nn.functional as F


def _train_step(model, opt, batch_fn, loss_fn):
    def step():
        x, y = batch_fn()
        opt.zero_grad(set_to_none=True)
        loss = loss_fn(model(x), y)
        loss.backward()
        opt.step()
        return loss
    return step


def mlp_step(device, features=256, hidden=512, classes=10, batch=128):
    model = nn.Sequential(nn.Linear(features, hidden), nn.ReLU(), nn.Linear(hidden, hidden), nn.GELU(),
                          nn.Linear(hidden, classes)).to(device)
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
    x = torch.randn(batch, features).to(device)
    y = torch.randint(0, classes, (batch,)).to(device)
    step = _train_step(model, opt, lambda: (x, y), F.cross_entropy)
    return step, step


class Block(nn.Module):
    def __init__(self, width, heads):
        super().__init__()
        self.heads = heads
        self.ln1 = nn.LayerNorm(width)
        self.qkv = nn.Linear(width, 3 * width)
        self.proj = nn.Linear(width, width)
        self.ln2 = nn.LayerNorm(width)
        self.mlp = nn.Sequential(nn.Linear(width, 4 * width), nn.GELU(approximate="tanh"), nn.Linear(4 * width, width))

    def forward(self, x):
        b, t, c = x.shape
        q, k, v = self.qkv(self.ln1(x)).split(c, dim=-1)
        q, k, v = (z.view(b, t, self.heads, c // self.heads).transpose(1, 2) for z in (q, k, v))
        a = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        x = x + self.proj(a.transpose(1, 2).reshape(b, t, c))
        return x + self.mlp(self.ln2(x))


class TinyGPT(nn.Module):
    def __init__(self, vocab=256, width=128, layers=2, heads=4, context=64):
        super().__init__()
        self.tok = nn.Embedding(vocab, width)
        self.pos = nn.Embedding(context, width)
        self.blocks = nn.ModuleList(Block(width, heads) for _ in range(layers))
        self.ln = nn.LayerNorm(width)
        self.head = nn.Linear(width, vocab, bias=False)

    def forward(self, idx):
        t = idx.shape[1]
        x = self.tok(idx) + self.pos(torch.arange(t, device=idx.device))
        for blk in self.blocks:
            x = blk(x)
        return self.head(self.ln(x))


def gpt_step(device, batch=8, seq=32, vocab=256):
    model = TinyGPT(vocab=vocab).to(device)
    opt = torch.optim.AdamW(model.parameters(), lr=3e-4)
    data = torch.randint(0, vocab, (batch, seq + 1)).to(device)
    x, y = data[:, :-1], data[:, 1:]
    step = _train_step(model, opt, lambda: (x, y),
                       lambda logits, tgt: F.cross_entropy(logits.reshape(-1, vocab), tgt.reshape(-1)))
    return step, step


def gpt_generate(device, new_tokens=32, vocab=256):
    torch.manual_seed(0)
    model = TinyGPT(vocab=vocab).to(device).eval()
    prompt = torch.randint(0, vocab, (1, 8)).to(device)

    def generate():
        idx = prompt
        with torch.no_grad():
            for _ in range(new_tokens):
                logits = model(idx[:, -64:])
                nxt = logits[:, -1].argmax(-1, keepdim=True)
                idx = torch.cat([idx, nxt], dim=1)
        return idx[0, -1].item()
    return generate


def cnn_step(device, batch=16):
    def block(cin, cout, stride):
        return nn.Sequential(nn.Conv2d(cin, cout, 3, stride, 1, bias=False), nn.BatchNorm2d(cout), nn.ReLU())
    model = nn.Sequential(block(3, 16, 1), block(16, 32, 2), block(32, 64, 2), nn.AdaptiveAvgPool2d(1),
                          nn.Flatten(), nn.Linear(64, 10)).to(device)
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
    x = torch.randn(batch, 3, 32, 32).to(device)
    y = torch.randint(0, 10, (batch,)).to(device)
    step = _train_step(model, opt, lambda: (x, y), F.cross_entropy)
    return step, step


def hf_llama_generate(device, new_tokens=64, prompt_len=8, static=False, compiled=None):
    """HF `generate()` on a tiny Llama-style model built from a config (no hub),
    greedy. `static`: HF's static KV cache (`cache_implementation="static"`);
    `compiled`: a torch.compile backend for the model's forward, the path HF
    recommends for fast decoding. Returns (generate, prompt_of(length))."""
    import transformers
    transformers.logging.set_verbosity_error()
    cfg = transformers.LlamaConfig(vocab_size=256, hidden_size=64, intermediate_size=128, num_hidden_layers=2,
                                   num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=256)
    torch.manual_seed(0)
    model = transformers.LlamaForCausalLM(cfg).eval().to(device)
    if compiled:
        model.forward = torch.compile(model.forward, backend=compiled)
    kw = dict(max_new_tokens=new_tokens, min_new_tokens=new_tokens, do_sample=False, pad_token_id=0)
    if static:
        kw["cache_implementation"] = "static"

    def prompt_of(length):
        return torch.randint(2, 256, (1, length), generator=torch.Generator().manual_seed(length)).to(device)
    prompt = prompt_of(prompt_len)

    def generate(x=None):
        with torch.no_grad():
            out = model.generate(prompt if x is None else x, **kw)
        return out[0, -1].item()
    return generate, prompt_of
