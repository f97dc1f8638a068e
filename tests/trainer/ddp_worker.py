"""A tiny random Llama, a fixed mixed batch, and the worker ``torchrun`` starts.

The learner tests build their models and samples here; ``test_distributed`` runs this file
under ``torchrun --nproc_per_node=2`` (gloo, CPU). Each rank builds the model with its OWN
seed (DDP must broadcast rank 0's weights), trains on its shard of the batch, and saves
its gradients and weights after each of two steps: one where the shards differ in size
(so ranks run different numbers of micro-batches), one where rank 1 has no samples.

With ``fsdp`` after OUT_DIR the learner shards the model (FSDP2) instead of replicating it;
a variant after that changes the model (``qwen3``) or the settings (:data:`VARIANTS`).

Usage: ``torchrun --nproc_per_node=2 tests/trainer/ddp_worker.py OUT_DIR [ddp|fsdp] [VARIANT]``
"""

from __future__ import annotations

import random
import sys
from pathlib import Path
from typing import Any

from spade_envs.trainer.samples import Sample

VOCAB = 64


def tiny_llama(seed: int = 0, *, tie: bool = False) -> Any:
    """A 2-layer LlamaForCausalLM with random weights (no download, ~40k parameters)."""
    import torch
    from transformers import LlamaConfig, LlamaForCausalLM

    torch.manual_seed(seed)
    config = LlamaConfig(
        vocab_size=VOCAB,
        hidden_size=32,
        intermediate_size=64,
        num_hidden_layers=2,
        num_attention_heads=4,
        num_key_value_heads=2,
        max_position_embeddings=256,
        tie_word_embeddings=tie,
        pad_token_id=0,
    )
    return LlamaForCausalLM(config).eval()


def tiny_qwen3(seed: int = 0) -> Any:
    """A 2-layer Qwen3ForCausalLM (q/k norms, explicit head_dim) with random weights."""
    import torch
    from transformers import Qwen3Config, Qwen3ForCausalLM

    torch.manual_seed(seed)
    config = Qwen3Config(
        vocab_size=VOCAB, hidden_size=32, intermediate_size=64, num_hidden_layers=2,
        num_attention_heads=4, num_key_value_heads=2, head_dim=8,
        max_position_embeddings=256, pad_token_id=0,
    )  # fmt: skip
    return Qwen3ForCausalLM(config).eval()


def mixed_samples(count: int = 5, *, seed: int = 0) -> list[Sample]:
    """Agent and designer samples of varied lengths; rewards vary inside each group."""
    rng = random.Random(seed)
    samples = []
    for i in range(count):
        role = "agent" if i % 5 < 3 else "designer"
        group = "env-a" if role == "agent" else "doc-1"
        prompt = [rng.randrange(1, VOCAB) for _ in range(rng.randint(2, 9))]
        completion = [rng.randrange(1, VOCAB) for _ in range(rng.randint(1, 6))]
        samples.append(Sample(role, prompt, completion, float(i % 3) + 0.25 * i, group))
    return samples


DDP_CONFIG = dict(micro_batch=2, learning_rate=1e-2, max_grad_norm=0.0, kl_coef=0.05)
#: The GRPO settings each worker variant adds: LoRA, or both memory-lean options (log-probs
#: in chunks of 3 positions, checkpointed blocks).
VARIANTS = {
    "": {},
    "qwen3": {},
    "lora": {"lora_rank": 4},
    "lean": {"logprob_chunk": 3, "activation_checkpointing": True},
}


def main(out_dir: str, sharding: str = "ddp", variant: str = "") -> None:
    import torch

    from spade_envs.trainer.distributed import init_distributed, shutdown
    from spade_envs.trainer.learner import GRPOConfig, Learner
    from spade_envs.trainer.sharding import full_tensor

    torch.set_num_threads(1)
    info = init_distributed("gloo")
    model = (
        tiny_qwen3(seed=100 + info.rank) if variant == "qwen3" else tiny_llama(seed=100 + info.rank)
    )
    learner = Learner(
        model, GRPOConfig(**DDP_CONFIG, sharding=sharding, **VARIANTS[variant]), seed=0
    )
    batches = [info.shard(mixed_samples(5)), mixed_samples(3, seed=1) if info.is_main else []]
    if sharding == "fsdp":
        batches.append(info.shard(mixed_samples(6, seed=2)))
    local = sum(getattr(p, "_local_tensor", p).numel() for p in model.parameters())
    record = {
        "rank": info.rank,
        "world_size": info.world_size,
        "steps": [],
        "sharded": learner.sharded,
        "local_share": local / sum(p.numel() for p in model.parameters()),
    }
    for number, batch in enumerate(batches):
        if number == 2 and sharding == "fsdp":
            # The checkpoint a sharded run writes (each rank its own shard), before a
            # third step the test repeats on one process from that state.
            record["state"] = learner.state_dict()
            learner.save_shards(Path(out_dir) / "shards")
        stats = learner.step(batch)
        record["steps"].append(
            {
                "samples": len(batch),
                "stats": stats,
                "grads": learner.gradients(),
                "params": {k: full_tensor(v.detach()).clone() for k, v in model.named_parameters()},
            }
        )
    torch.save(record, Path(out_dir) / f"rank{info.rank}.pt")
    shutdown()


if __name__ == "__main__":
    main(*sys.argv[1:4])
