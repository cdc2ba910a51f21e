"""Hugging Face on 'tpu' (issue #14): tied weights survive `.to('tpu')`, and
tiny models built offline from configs train, generate and load/save exactly
as the same models do on CPU. No hub access: every model is built from a
config here, every checkpoint written here.
"""
import os

import pytest
import torch

from _helpers import assert_same, tpu_only

transformers = pytest.importorskip("transformers")
pytestmark = tpu_only


def llama(tie=True):
    cfg = transformers.LlamaConfig(vocab_size=96, hidden_size=32, intermediate_size=64, num_hidden_layers=2,
                                   num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=64,
                                   tie_word_embeddings=tie)
    return transformers.LlamaForCausalLM(cfg)


def gpt2():
    cfg = transformers.GPT2Config(vocab_size=96, n_positions=32, n_embd=32, n_layer=2, n_head=2,
                                  bos_token_id=0, eos_token_id=1)
    return transformers.GPT2LMHeadModel(cfg)


def bert():
    cfg = transformers.BertConfig(vocab_size=96, hidden_size=32, num_hidden_layers=2, num_attention_heads=2,
                                  intermediate_size=64, max_position_embeddings=32)
    return transformers.BertForMaskedLM(cfg)


MODELS = {"llama": llama, "gpt2": gpt2, "bert": bert}
TIED = {"llama": ("lm_head", "model.embed_tokens"), "gpt2": ("lm_head", "transformer.wte"),
        "bert": ("cls.predictions.decoder", "bert.embeddings.word_embeddings")}


def build(name):
    torch.manual_seed(0)
    return MODELS[name]().eval()


def ids(n=2, t=10, seed=0):
    return torch.randint(2, 96, (n, t), generator=torch.Generator().manual_seed(seed))


def weight(model, path):
    return model.get_submodule(path).weight


@pytest.mark.parametrize("name", list(MODELS))
def test_tied_weights_survive_to_and_back(name):
    m = build(name)
    head, emb = TIED[name]
    w = weight(m, emb)
    assert weight(m, head) is w
    m.to("tpu")
    assert weight(m, head) is w and weight(m, emb) is w and w.device.type == "tpu"
    m.cpu()
    assert weight(m, head) is w and w.device.type == "cpu"


@pytest.mark.parametrize("name", list(MODELS))
def test_forward_backward_match_cpu(name):
    ref, m = build(name), build(name).to("tpu")
    x = ids()
    out_ref = ref(input_ids=x, labels=x)
    out = m(input_ids=x.to("tpu"), labels=x.to("tpu"))
    out_ref.loss.backward()
    out.loss.backward()
    assert_same(out.logits, out_ref.logits, atol=1e-4, rtol=1e-4)
    assert_same(out.loss, out_ref.loss, atol=1e-5, rtol=1e-5)
    grads = {k: p.grad for k, p in m.named_parameters()}
    ref_grads = {k: p.grad for k, p in ref.named_parameters()}
    assert grads.keys() == ref_grads.keys()
    for k in grads:
        assert_same(grads[k], ref_grads[k], atol=1e-4, rtol=1e-3)


@pytest.mark.parametrize("name", ["llama", "gpt2"])
def test_generate_greedy_and_sampled_match_cpu(name):
    ref, m = build(name), build(name).to("tpu")
    prompt = ids(1, 4)
    greedy = m.generate(prompt.to("tpu"), max_new_tokens=8, do_sample=False, pad_token_id=0)
    assert greedy.cpu().tolist() == ref.generate(prompt, max_new_tokens=8, do_sample=False, pad_token_id=0).tolist()
    # Sampling draws from the device generator: a seed reproduces the run.
    runs = []
    for _ in range(2):
        torch.manual_seed(5)
        runs.append(m.generate(prompt.to("tpu"), max_new_tokens=6, do_sample=True, top_k=8, pad_token_id=0).cpu())
    assert runs[0].tolist() == runs[1].tolist() and runs[0].shape == (1, 10)


def test_optimizer_built_before_to_trains_like_cpu():
    def train(device):
        m = build("llama").train()
        opt = torch.optim.AdamW(m.parameters(), lr=1e-2)  # before .to(), as HF scripts often do
        m.to(device)
        losses = []
        for s in range(3):
            x = ids(seed=s).to(device)
            loss = m(input_ids=x, labels=x).loss
            opt.zero_grad()
            loss.backward()
            opt.step()
            losses.append(loss.item())
        return losses, weight(m, "model.embed_tokens")
    ref_losses, ref_w = train("cpu")
    losses, w = train("tpu")
    assert losses == pytest.approx(ref_losses, rel=1e-4, abs=1e-5)
    assert_same(w.detach(), ref_w.detach(), atol=1e-4, rtol=1e-4)


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
def test_from_pretrained_device_map_and_save_round_trip(tmp_path, dtype):
    pytest.importorskip("accelerate")
    src = build("llama")
    src.save_pretrained(tmp_path / "src")
    m = transformers.AutoModelForCausalLM.from_pretrained(tmp_path / "src", device_map="tpu", dtype=dtype)
    ref = transformers.AutoModelForCausalLM.from_pretrained(tmp_path / "src", dtype=dtype)
    assert weight(m, "lm_head") is weight(m, "model.embed_tokens")
    assert {p.device.type for p in m.parameters()} == {"tpu"}
    assert {p.dtype for p in m.parameters()} == {dtype}
    x = ids()
    tol = 1e-4 if dtype == torch.float32 else 3e-2
    assert_same(m(input_ids=x.to("tpu")).logits, ref(input_ids=x).logits, atol=tol, rtol=tol)
    # Saving from the device: safetensors finds the tied pair by storage address and writes it once.
    m.save_pretrained(tmp_path / "dst")
    back = transformers.AutoModelForCausalLM.from_pretrained(tmp_path / "dst", dtype=dtype)
    for (k, p), (_, q) in zip(back.named_parameters(), ref.named_parameters()):
        assert torch.equal(p, q), k


def test_safetensors_load_onto_tpu(tmp_path):
    from safetensors import safe_open
    from safetensors.torch import load_file, save_file

    tensors = {"a": torch.arange(6.0).view(2, 3), "b": torch.tensor([1, 2, 3], dtype=torch.int8)}
    path = os.fspath(tmp_path / "t.safetensors")
    save_file(tensors, path)
    loaded = load_file(path, device="tpu")
    assert {v.device.type for v in loaded.values()} == {"tpu"}
    assert_same(loaded, tensors)
    last = f"tpu:{torch.tpu.device_count() - 1}"
    with safe_open(path, framework="pt", device=last) as f:
        assert sorted(f.keys()) == ["a", "b"]
        assert f.get_tensor("a").device == torch.device(last)
        assert f.get_slice("a")[1:].cpu().equal(tensors["a"][1:])
    # Shared storage is detected on 'tpu' as on CPU (by address range).
    shared = torch.zeros(4, device="tpu")
    with pytest.raises(RuntimeError, match="share memory"):
        save_file({"x": shared, "y": shared[:2]}, os.fspath(tmp_path / "s.safetensors"))
