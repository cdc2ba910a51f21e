"""Models for the benchmark suite, built from torch.nn only, with synthetic data."""
import torch
import torch.nn as nn
import torch.nn.functional as F


def _train_step(model, opt, batch, loss_fn, lr):
    """(step, parts): the eager AdamW step, and its parts for a contender that
    builds its own step (bench/peers.py's jax.jit one): model, loss, batch, lr."""
    x, y = batch

    def step():
        opt.zero_grad(set_to_none=True)
        loss = loss_fn(model(x), y)
        loss.backward()
        opt.step()
        return loss
    return step, {"model": model, "loss": loss_fn, "batch": batch, "lr": lr}


def mlp_step(device, features=256, hidden=512, classes=10, batch=128):
    model = nn.Sequential(nn.Linear(features, hidden), nn.ReLU(), nn.Linear(hidden, hidden), nn.GELU(),
                          nn.Linear(hidden, classes)).to(device)
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
    x = torch.randn(batch, features).to(device)
    y = torch.randint(0, classes, (batch,)).to(device)
    return _train_step(model, opt, (x, y), F.cross_entropy, 1e-3)


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
    return _train_step(model, opt, (x, y),
                       lambda logits, tgt: F.cross_entropy(logits.reshape(-1, vocab), tgt.reshape(-1)), 3e-4)


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
    return _train_step(model, opt, (x, y), F.cross_entropy, 1e-3)


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


def op_chain(device, size=128, length=50):
    """A dependent chain of small elementwise ops (3 per link): per-op host
    overhead in eager modes, one fused kernel for a compiler. Returns
    (fn, x): fn(x) is the chain; x its input on `device`."""
    def chain(x):
        for _ in range(length):
            x = torch.tanh(x * 1.01 + 0.01)
        return x
    return chain, torch.randn(size, size).to(device)


class KVDecoder(nn.Module):
    """TinyGPT's weights run one token at a time over a static KV cache:
    forward(tok [B, 1], pos (0-d int64), cache [layers, 2, B, heads, context,
    head_dim]) -> (logits [B, 1, vocab], new cache). Out-of-place cache
    update and fixed shapes, so a tracing compiler builds one executable for
    every position."""

    def __init__(self, gpt: TinyGPT):
        super().__init__()
        self.gpt = gpt

    def forward(self, tok, pos, cache):
        g = self.gpt
        x = g.tok(tok) + g.pos(pos.view(1))
        context = cache.shape[4]
        visible = torch.arange(context, device=tok.device) <= pos
        layers = []
        for i, blk in enumerate(g.blocks):
            b, t, c = x.shape
            h = blk.heads
            q, k, v = blk.qkv(blk.ln1(x)).split(c, dim=-1)
            q, k, v = (z.view(b, t, h, c // h).transpose(1, 2) for z in (q, k, v))
            kc = cache[i, 0].index_copy(2, pos.view(1), k)
            vc = cache[i, 1].index_copy(2, pos.view(1), v)
            layers.append(torch.stack([kc, vc]))
            s = (q @ kc.transpose(-1, -2)) * (c // h) ** -0.5
            a = torch.softmax(s.masked_fill(~visible, float("-inf")), dim=-1) @ vc
            x = x + blk.proj(a.transpose(1, 2).reshape(b, t, c))
            x = x + blk.mlp(blk.ln2(x))
        return g.head(g.ln(x)), torch.stack(layers)


def gpt_kv_generate(device, wrap=lambda m: m, new_tokens=32, prompt_len=8, batch=1, vocab=256, context=64):
    """Greedy generation with a static KV cache: the prompt and then
    `new_tokens` tokens, one decode call each, tokens staying on the device
    until the one host read at the end. `wrap(decoder)` returns the callable
    a contender runs (torch.compile, a jit, or the module itself). Returns
    (generate, {"decoder", "prompt"})."""
    torch.manual_seed(0)
    gpt = TinyGPT(vocab=vocab, context=context).eval()
    decoder = KVDecoder(gpt).to(device)
    decode = wrap(decoder)
    heads = gpt.blocks[0].heads
    width = gpt.tok.embedding_dim
    shape = (len(gpt.blocks), 2, batch, heads, context, width // heads)
    prompt = torch.randint(0, vocab, (batch, prompt_len)).to(device)

    def generate():
        with torch.no_grad():
            cache = torch.zeros(shape, device=device)
            pos = torch.zeros((), dtype=torch.long, device=device)
            for i in range(prompt_len - 1):
                _, cache = decode(prompt[:, i:i + 1], pos, cache)
                pos = pos + 1
            tok = prompt[:, -1:]
            out = []
            for _ in range(new_tokens):
                logits, cache = decode(tok, pos, cache)
                tok = logits.argmax(-1)
                pos = pos + 1
                out.append(tok)
            return torch.cat(out, dim=1)
    return generate, {"decoder": decoder, "prompt": prompt}
