"""TorchTitan configs for the 'tpu' runs (issue #17), selected with
`--module tools.titan.config --config <name>` (tools/titan/run.py passes them).

They are TorchTitan's own llama3 / qwen3 debug models and trainer, changed only
where the run must be offline and short: the tokenizer and dataset come from
tools/titan/assets.py, the sequence is 128 tokens, no validation, a fixed
seed, checkpoints every 10 steps under the dump folder.
"""
import os

from torchtitan.models.llama3.config_registry import llama3_debugmodel
from torchtitan.models.qwen3.config_registry import qwen3_debugmodel

ASSETS = os.environ.get("TTPU_TITAN_ASSETS", os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "build", "titan"))


def _offline(config):
    config.hf_assets_path = os.path.join(ASSETS, "tokenizer")
    config.dataloader.dataset = "c4_test"
    config.dataloader.dataset_path = os.path.join(ASSETS, "dataset")
    config.training.seq_len = 128
    config.training.local_batch_size = 2
    config.training.disable_cuda_graphs = True  # a CUDA feature; also lets pipeline parallelism run
    config.training.steps = 20
    config.debug.seed = 42
    config.checkpoint.interval = 10
    config.metrics.log_freq = 1
    config.parallelism.pipeline_parallel_schedule = "1F1B"
    return config


def llama3_debug():
    return _offline(llama3_debugmodel())


def qwen3_debug():
    return _offline(qwen3_debugmodel())
