"""Offline assets for the TorchTitan runs (issue #17): a small byte-level BPE
tokenizer and a text dataset, both generated here from a fixed seed, so the
run needs no download from the Hugging Face hub.

    python tools/titan/assets.py OUT_DIR    -> OUT_DIR/tokenizer/, OUT_DIR/dataset/
"""
import json
import os
import random
import sys

# A tiny grammar: sentences a language model can learn something from within
# a few steps (repeated structure), varied enough that the loss keeps moving.
SUBJECTS = ["the device", "a tensor", "the compiler", "every rank", "the model", "a small kernel",
            "the optimizer", "this layer", "the scheduler", "a buffer", "the host", "each process"]
VERBS = ["reads", "writes", "moves", "fuses", "shards", "gathers", "reduces", "copies", "lowers",
         "compiles", "updates", "checks", "waits for", "sends", "receives"]
OBJECTS = ["the weights", "its gradient", "a new graph", "the batch", "every shard", "the result",
           "the cache", "one executable", "the logits", "a scalar", "the parameters", "its state"]
TAILS = ["before the step ends", "on the next call", "in one pass", "without a copy", "at the sync point",
         "after the backward", "twice", "once per step", "in place", "as before"]


def sentences(rng, n):
    for _ in range(n):
        s = f"{rng.choice(SUBJECTS)} {rng.choice(VERBS)} {rng.choice(OBJECTS)} {rng.choice(TAILS)}."
        yield s[0].upper() + s[1:]


def make(out):
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers

    rng = random.Random(1234)
    docs = [" ".join(sentences(rng, rng.randint(6, 40))) for _ in range(2000)]
    data_dir = os.path.join(out, "dataset")
    tok_dir = os.path.join(out, "tokenizer")
    os.makedirs(data_dir, exist_ok=True)
    os.makedirs(tok_dir, exist_ok=True)
    with open(os.path.join(data_dir, "train.json"), "w") as f:
        for d in docs:
            f.write(json.dumps({"text": d}) + "\n")

    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    specials = ["<|begin_of_text|>", "<|end_of_text|>"]
    trainer = trainers.BpeTrainer(vocab_size=512, special_tokens=specials,
                                  initial_alphabet=pre_tokenizers.ByteLevel.alphabet())
    tok.train_from_iterator(docs, trainer)
    tok.save(os.path.join(tok_dir, "tokenizer.json"))
    with open(os.path.join(tok_dir, "tokenizer_config.json"), "w") as f:
        json.dump({"bos_token": specials[0], "eos_token": specials[1], "add_bos_token": True,
                   "add_eos_token": True, "tokenizer_class": "PreTrainedTokenizerFast"}, f)
    return tok_dir, data_dir


if __name__ == "__main__":
    print(make(sys.argv[1]))
