"""Hugging Face on 'tpu' (issue #14): tied weights survive `.to('tpu')`, and
tiny models built offline from configs train, generate and load/save exactly
as the same models do on CPU. No hub access: every model is built from a
config here, every checkpoint written here.
"""
import copy
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


# ---- the HF stack a user reaches for: each compared with the same run on CPU ----

def test_static_cache_generate_compiled_matches_cpu():
    ref, m = build("llama"), build("llama").to("tpu")
    x = ids()
    kw = dict(max_new_tokens=6, do_sample=False, pad_token_id=0, cache_implementation="static")
    want = ref.generate(x, **kw)
    assert m.generate(x.to("tpu"), **kw).cpu().tolist() == want.tolist()
    m.forward = torch.compile(m.forward, backend="tpu")  # the path HF recommends for fast decoding
    for _ in range(2):  # the second call replays the captured executables
        assert m.generate(x.to("tpu"), **kw).cpu().tolist() == want.tolist()


class _TokenData(torch.utils.data.Dataset):
    def __init__(self):
        self.x = torch.randint(2, 96, (16, 12), generator=torch.Generator().manual_seed(0))

    def __len__(self):
        return len(self.x)

    def __getitem__(self, i):
        return {"input_ids": self.x[i], "labels": self.x[i]}


def _trainer_losses(tmp_path, use_cpu, bf16):
    # One process, two Trainers: Accelerate keeps its device in a process-wide
    # singleton, so each run starts from a reset state, as a fresh process would.
    from accelerate.state import AcceleratorState, PartialState
    AcceleratorState._reset_state(reset_partial_state=True)
    PartialState._reset_state()
    args = transformers.TrainingArguments(
        output_dir=os.fspath(tmp_path), per_device_train_batch_size=2, gradient_accumulation_steps=2,
        max_steps=3, learning_rate=1e-3, logging_steps=1, save_strategy="no", report_to=[], use_cpu=use_cpu,
        bf16=bf16, seed=0, data_seed=0, dataloader_num_workers=0, disable_tqdm=True)
    model = build("llama").train()
    trainer = transformers.Trainer(model=model, args=args, train_dataset=_TokenData())
    trainer.train()
    return args.device, {p.device.type for p in model.parameters()}, \
        [h["loss"] for h in trainer.state.log_history if "loss" in h]


@pytest.mark.parametrize("bf16", [False, True], ids=["fp32", "bf16"])
def test_trainer_trains_on_tpu_like_cpu(tmp_path, bf16):
    pytest.importorskip("accelerate")
    _, _, want = _trainer_losses(tmp_path, True, bf16)
    device, param_devices, losses = _trainer_losses(tmp_path, False, bf16)
    assert device.type == "tpu" and param_devices == {"tpu"}  # Trainer picks 'tpu' by itself
    tol = 1e-5 if not bf16 else 2e-3
    assert len(losses) == 3 and losses == pytest.approx(want, rel=tol, abs=tol)


def test_accelerate_picks_tpu_and_cpu_flag_still_wins():
    accelerate = pytest.importorskip("accelerate")
    from accelerate.state import PartialState
    PartialState._reset_state()
    assert PartialState().device.type == "tpu"
    PartialState._reset_state()
    assert PartialState(cpu=True).device.type == "cpu"
    PartialState._reset_state()
    acc = accelerate.Accelerator(mixed_precision="bf16")
    model, opt = acc.prepare(torch.nn.Linear(4, 4), None)
    assert next(model.parameters()).device.type == "tpu"
    x = torch.randn(2, 4, device="tpu")
    with acc.autocast():
        assert (x @ x.T).dtype == torch.bfloat16
        y = model(x)  # prepare() wraps forward in autocast and returns f32 outputs
    assert y.dtype == torch.float32
    want = torch.nn.functional.linear(x.bfloat16(), model.weight.bfloat16(), model.bias.bfloat16()).float()
    assert torch.equal(y.cpu(), want.cpu())
    PartialState._reset_state()


def test_peft_lora_fine_tuning_matches_cpu():
    peft = pytest.importorskip("peft")

    def run(device):
        torch.manual_seed(1)
        m = peft.get_peft_model(build("llama"), peft.LoraConfig(r=4, lora_alpha=8, lora_dropout=0.0,
                                                                target_modules=["q_proj", "v_proj"])).to(device)
        trainable = [p for p in m.parameters() if p.requires_grad]
        opt = torch.optim.AdamW(trainable, lr=1e-2)
        x = ids().to(device)
        losses = []
        for _ in range(3):
            loss = m(input_ids=x, labels=x).loss
            loss.backward()
            opt.step()
            opt.zero_grad()
            losses.append(loss.item())
        merged = m.merge_and_unload()
        return losses, len(trainable), merged(input_ids=x).logits
    want, n_ref, logits_ref = run("cpu")
    losses, n, logits = run("tpu")
    assert n == n_ref == 8  # A and B of q and v in 2 layers; the base stays frozen
    assert losses == pytest.approx(want, rel=1e-5, abs=1e-5)
    assert_same(logits, logits_ref, atol=1e-4, rtol=1e-4)


def test_diffusers_unet_pipeline_and_backward_match_cpu():
    diffusers = pytest.importorskip("diffusers")

    def unet():
        torch.manual_seed(0)
        return diffusers.UNet2DModel(
            sample_size=16, in_channels=3, out_channels=3, layers_per_block=1, block_out_channels=(16, 32),
            down_block_types=("DownBlock2D", "AttnDownBlock2D"), up_block_types=("AttnUpBlock2D", "UpBlock2D"),
            norm_num_groups=8)

    def sample(device):
        pipe = diffusers.DDPMPipeline(unet=unet(), scheduler=diffusers.DDPMScheduler(num_train_timesteps=100))
        pipe = pipe.to(device)
        pipe.set_progress_bar_config(disable=True)
        out = pipe(batch_size=2, generator=torch.Generator().manual_seed(0), num_inference_steps=3,
                   output_type="np").images
        return torch.from_numpy(out)
    assert_same(sample("tpu"), sample("cpu"), atol=1e-4, rtol=1e-4, check_device=False)
    # A training step of the denoiser (channels-last group norms, attention, up/down sampling).
    ref, m = unet(), unet().to("tpu")
    x = torch.randn(2, 3, 16, 16, generator=torch.Generator().manual_seed(1))
    t = torch.tensor([3, 70])
    ref(x, t).sample.square().mean().backward()
    m(x.to("tpu"), t.to("tpu")).sample.square().mean().backward()
    for (k, p), (_, q) in zip(m.named_parameters(), ref.named_parameters()):
        assert_same(p.grad, q.grad, atol=1e-4, rtol=1e-3), k


def test_whisper_forward_backward_generate_match_cpu():
    cfg = transformers.WhisperConfig(
        vocab_size=96, num_mel_bins=16, encoder_layers=2, decoder_layers=2, encoder_attention_heads=2,
        decoder_attention_heads=2, encoder_ffn_dim=64, decoder_ffn_dim=64, d_model=32, max_source_positions=16,
        max_target_positions=32, pad_token_id=0, bos_token_id=1, eos_token_id=2, decoder_start_token_id=1,
        suppress_tokens=None, begin_suppress_tokens=None)
    torch.manual_seed(0)
    ref = transformers.WhisperForConditionalGeneration(cfg).eval()
    m = copy.deepcopy(ref).to("tpu")
    feats = torch.randn(2, 16, 32, generator=torch.Generator().manual_seed(0))
    labels = ids(2, 6)
    out_ref = ref(input_features=feats, labels=labels)
    out = m(input_features=feats.to("tpu"), labels=labels.to("tpu"))
    assert_same(out.logits, out_ref.logits, atol=1e-4, rtol=1e-4)
    out_ref.loss.backward()
    out.loss.backward()
    for (k, p), (_, q) in zip(m.named_parameters(), ref.named_parameters()):
        assert_same(p.grad, q.grad, atol=1e-4, rtol=1e-3), k
    kw = dict(max_new_tokens=5, do_sample=False)
    assert m.generate(feats.to("tpu"), **kw).cpu().tolist() == ref.generate(feats, **kw).tolist()


# One architecture per kind `make test-hf` sweeps (tests/hf_sweep.py: every
# architecture of the auto mappings): sliding window, MoE, a hybrid with linear
# attention, short-conv hybrid, encoder, encoder-decoder, classification, vision.
REPRESENTATIVE = ["causal_lm:mistral", "causal_lm:mixtral", "causal_lm:qwen3_moe", "causal_lm:gpt_oss",
                  "causal_lm:qwen3_next", "causal_lm:lfm2", "masked_lm:roberta", "seq2seq:t5", "seq2seq:bart",
                  "seq_cls:bert", "image_cls:vit", "image_cls:convnext", "image_cls:resnet"]


@pytest.mark.parametrize("which", REPRESENTATIVE)
def test_architecture_forward_backward_generate_bf16_match_cpu(which):
    import hf_sweep
    family, arch = which.split(":")
    r = hf_sweep.run_arch(family, arch)
    assert r["status"] == "ok", r.get("why")
    stages = {s: r[s] for s in hf_sweep.STAGES}
    assert all(v in (None, "n/a") for v in stages.values()), stages
    assert stages["forward"] is None and stages["backward"] is None
    if family in ("causal_lm", "seq2seq"):
        assert stages["generate"] is None


def _forward_backward_generate(ref, kwargs, generate_kwargs=None):
    """The model on 'tpu' gives CPU's logits, every gradient, and greedy tokens."""
    m = copy.deepcopy(ref).to("tpu")
    on_tpu = {k: v.to("tpu") for k, v in kwargs.items()}
    out_ref, out = ref(**kwargs), m(**on_tpu)
    assert_same(out.logits, out_ref.logits, atol=1e-4, rtol=1e-4)
    w = torch.linspace(-1, 1, out_ref.logits.numel()).reshape(out_ref.logits.shape)
    (out_ref.logits * w).sum().backward()
    (out.logits * w.to("tpu")).sum().backward()
    for (k, p), (_, q) in zip(m.named_parameters(), ref.named_parameters()):
        assert (p.grad is None) == (q.grad is None), k
        if q.grad is not None:
            assert_same(p.grad, q.grad, atol=1e-4 * max(1.0, q.grad.abs().max().item()), rtol=1e-3), k
    if generate_kwargs is not None:
        kw = dict(max_new_tokens=5, do_sample=False, **generate_kwargs)
        assert m.generate(**on_tpu, **kw).cpu().tolist() == ref.generate(**kwargs, **kw).tolist()


def test_small_vlm_llava_matches_cpu():
    vision = transformers.CLIPVisionConfig(hidden_size=32, intermediate_size=64, num_hidden_layers=2,
                                           num_attention_heads=4, image_size=32, patch_size=8, projection_dim=32)
    text = transformers.LlamaConfig(vocab_size=128, hidden_size=32, intermediate_size=64, num_hidden_layers=2,
                                    num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=128,
                                    pad_token_id=0)
    cfg = transformers.LlavaConfig(vision_config=vision, text_config=text, image_token_index=100,
                                   vision_feature_layer=-1)
    torch.manual_seed(0)
    ref = transformers.LlavaForConditionalGeneration(cfg).eval()
    g = torch.Generator().manual_seed(0)
    image_tokens = torch.full((2, 16), 100)  # one per patch: (32 / 8) ** 2
    input_ids = torch.cat([image_tokens, torch.randint(3, 90, (2, 6), generator=g)], 1)
    _forward_backward_generate(ref, {"input_ids": input_ids, "pixel_values": torch.randn(2, 3, 32, 32, generator=g)},
                               generate_kwargs={})


def test_detr_like_detector_matches_cpu():
    backbone = transformers.ResNetConfig(embedding_size=8, hidden_sizes=[8, 16, 32, 64], depths=[1, 1, 1, 1],
                                         out_features=["stage4"])
    cfg = transformers.DetrConfig(use_timm_backbone=False, backbone_config=backbone, use_pretrained_backbone=False,
                                  d_model=32, encoder_layers=1, decoder_layers=1, encoder_attention_heads=2,
                                  decoder_attention_heads=2, encoder_ffn_dim=32, decoder_ffn_dim=32,
                                  num_queries=5, num_labels=4)
    torch.manual_seed(0)
    ref = transformers.DetrForObjectDetection(cfg).eval()
    pixels = torch.randn(2, 3, 64, 64, generator=torch.Generator().manual_seed(0))
    _forward_backward_generate(ref, {"pixel_values": pixels})


def _fp4_dequant(blocks, scales):
    """MXFP4 reference on CPU, from the format's definition (not HF's code):
    each byte holds two e2m1 values (element 2i in the low nibble), each block
    of 32 values shares the scale 2^(byte - 127). [E, R, G, 16] bytes and
    [E, R, G] scales -> [E, G * 32, R] as GPT-OSS's expert weights lie."""
    mags = torch.tensor([0, 0.5, 1, 1.5, 2, 3, 4, 6], dtype=torch.float64)
    codes = torch.stack([blocks & 15, blocks >> 4], -1).reshape(*blocks.shape[:-1], 32).long()
    vals = mags[codes & 7] * torch.where(codes >= 8, -1.0, 1.0)
    vals = vals * torch.exp2(scales.double() - 127).unsqueeze(-1)
    return vals.reshape(*blocks.shape[:2], -1).transpose(1, 2)


def test_gpt_oss_mxfp4_checkpoint_loads_on_tpu_like_cpu(tmp_path):
    """A tiny GPT-OSS checkpoint whose expert weights are MXFP4 (blocks and
    e8m0 scales, quant_method mxfp4), written here. Transformers dequantizes
    it to bf16 while loading on 'tpu' (no Triton MXFP4 kernels there, as on a
    CPU without them); the weights equal the format's definition and CPU's
    load, and logits and greedy generation equal CPU's."""
    import json
    from safetensors.torch import load_file, save_file
    cfg = transformers.GptOssConfig(vocab_size=128, hidden_size=64, intermediate_size=64, num_hidden_layers=2,
                                    num_attention_heads=4, num_key_value_heads=2, head_dim=16, num_local_experts=4,
                                    num_experts_per_tok=2, max_position_embeddings=256, sliding_window=32,
                                    layer_types=["sliding_attention", "full_attention"])
    torch.manual_seed(0)
    transformers.GptOssForCausalLM(cfg).to(torch.bfloat16).save_pretrained(tmp_path)
    sd = load_file(tmp_path / "model.safetensors")
    g = torch.Generator().manual_seed(1)
    packed = {}
    for k in [k for k in sd if k.endswith(("experts.gate_up_proj", "experts.down_proj"))]:
        e, din, dout = sd.pop(k).shape  # the bf16 parameter is [E, in, out]
        blocks = torch.randint(0, 256, (e, dout, din // 32, 16), dtype=torch.uint8, generator=g)
        scales = torch.randint(120, 128, (e, dout, din // 32), dtype=torch.uint8, generator=g)
        sd[k + "_blocks"], sd[k + "_scales"] = blocks, scales
        packed[k] = (blocks, scales)
    save_file(sd, tmp_path / "model.safetensors", metadata={"format": "pt"})
    config = json.loads((tmp_path / "config.json").read_text())
    config["quantization_config"] = {"quant_method": "mxfp4", "modules_to_not_convert": [
        "model.layers.*.self_attn", "model.layers.*.mlp.router", "model.embed_tokens", "lm_head"]}
    (tmp_path / "config.json").write_text(json.dumps(config))

    cpu = transformers.AutoModelForCausalLM.from_pretrained(tmp_path, dtype=torch.bfloat16)
    dev = transformers.AutoModelForCausalLM.from_pretrained(tmp_path, dtype=torch.bfloat16, device_map="tpu")
    params = dict(dev.named_parameters())
    for name, p in cpu.named_parameters():
        assert params[name].device.type == "tpu"
        assert torch.equal(params[name].cpu(), p), name
    for k, (blocks, scales) in packed.items():
        want = _fp4_dequant(blocks, scales).to(torch.bfloat16)
        assert torch.equal(params[k].cpu(), want), k
    ids = torch.randint(0, 128, (2, 12), generator=torch.Generator().manual_seed(0))
    assert torch.equal(dev(ids.to("tpu")).logits.cpu(), cpu(ids).logits)
    assert torch.equal(dev.generate(ids.to("tpu"), max_new_tokens=8, do_sample=False).cpu(),
                       cpu.generate(ids, max_new_tokens=8, do_sample=False))
