"""GPU check: the learner's bf16 update throughput and transformers generation throughput
for a randomly initialised ~0.5B-parameter model (no weights, no vLLM needed).

Made for a lent GPU machine that has torch and transformers but no model weights: the
model is a Llama-architecture network with Qwen2.5-0.5B's shape (hidden 896, 24 layers,
14 heads and 2 key-value heads, MLP 4864, 151,936-token vocabulary, tied embeddings:
~0.49B parameters), initialised at random. It measures, each against a baseline of the
same run:

1. **update**: :meth:`Learner.step` (GRPO, full fine-tuning, bf16, micro-batches) on
   synthetic agent samples, in trained tokens/s, against a plain forward + backward +
   AdamW step over the same tokens (the ratio is the learner's overhead: < 1 costs);
2. **generation**: ``model.generate`` (greedy) at batch 32 against batch 1, in generated
   tokens/s;
3. **memory**: for a Qwen3-4B-shaped model built from its config (random weights), the
   memory planner's predicted peak (:mod:`spade_envs.trainer.memory_plan`) against
   ``torch.cuda.max_memory_allocated`` for three learner setups (target: within 15%;
   planned without a GPU capacity, so without the CUDA-context and fragmentation
   allowance, which the allocator does not report either), and the learner's tokens/s
   and MFU;
4. **sharded**: the learner sharded with FSDP2 (a process group of one rank, NCCL on a GPU)
   with log-probs in chunks and checkpointed blocks: two steps, the checkpoint written
   shard by shard (``torch.distributed.checkpoint``), and a fresh learner resumed from it
   whose next step must land on the same weights (largest difference reported), plus
   the save's seconds.

Prints one JSON object (also written to ``$OUT/gpu_check.json`` when ``$OUT`` is set).
Finishes in a few minutes on one GPU; ``--scale tiny --device cpu`` is a one-minute smoke
run of the same code on a CPU.

    python benchmarks/gpu_check.py                      # on the GPU machine
    python benchmarks/gpu_check.py --scale tiny --device cpu --memory-model tiny

Never collected by pytest.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

SHAPES = {
    # Qwen2.5-0.5B's shape in the Llama architecture.
    "0.5b": dict(hidden_size=896, num_hidden_layers=24, num_attention_heads=14,
                 num_key_value_heads=2, intermediate_size=4864, vocab_size=151_936),
    "tiny": dict(hidden_size=64, num_hidden_layers=2, num_attention_heads=4,
                 num_key_value_heads=2, intermediate_size=128, vocab_size=1024),
}  # fmt: skip


def _model(scale: str, device: str, dtype: Any) -> Any:
    import torch
    from transformers import LlamaConfig, LlamaForCausalLM

    torch.manual_seed(0)
    config = LlamaConfig(
        **SHAPES[scale], max_position_embeddings=4096, tie_word_embeddings=True,
        pad_token_id=0, bos_token_id=1, eos_token_id=2,
    )  # fmt: skip
    return LlamaForCausalLM(config).to(device=device, dtype=dtype).eval()


def _samples(count: int, prompt: int, completion: int, vocab: int) -> list[Any]:
    from spade_envs.trainer.samples import Sample

    rng = random.Random(0)
    return [
        Sample(
            role="agent",
            prompt_ids=[rng.randrange(3, vocab) for _ in range(prompt)],
            completion_ids=[rng.randrange(3, vocab) for _ in range(completion)],
            reward=float(i % 2),
            group=f"g{i // 8}",
        )
        for i in range(count)
    ]


def _sync(device: str) -> None:
    import torch

    if device.startswith("cuda"):
        torch.cuda.synchronize()


def measure_update(args: argparse.Namespace, dtype: Any) -> dict[str, float]:
    import torch

    from spade_envs.trainer.learner import GRPOConfig, Learner

    vocab = SHAPES[args.scale]["vocab_size"]
    samples = _samples(args.samples, args.prompt, args.completion, vocab)
    tokens = sum(len(s.prompt_ids) + len(s.completion_ids) for s in samples)
    config = GRPOConfig(learning_rate=1e-6, lora_rank=0, micro_batch=args.micro_batch,
                        max_seq_len=args.prompt + args.completion)  # fmt: skip
    learner = Learner(_model(args.scale, args.device, dtype), config, seed=0)
    learner.step(samples[: args.micro_batch])  # warm-up (kernels, allocator)
    _sync(args.device)
    started = time.perf_counter()
    for _ in range(args.repeats):
        learner.step(samples)
    _sync(args.device)
    learner_tps = args.repeats * tokens / (time.perf_counter() - started)
    del learner

    # Baseline: the same tokens through forward + cross-entropy + backward + AdamW.
    model = _model(args.scale, args.device, dtype).train()
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-6)
    ids = torch.tensor([s.prompt_ids + s.completion_ids for s in samples], device=args.device)

    def plain_step() -> None:
        optimizer.zero_grad(set_to_none=True)
        for start in range(0, len(ids), args.micro_batch):
            batch = ids[start : start + args.micro_batch]
            loss = model(input_ids=batch, labels=batch).loss
            (loss * len(batch) / len(ids)).backward()
        optimizer.step()

    plain_step()
    _sync(args.device)
    started = time.perf_counter()
    for _ in range(args.repeats):
        plain_step()
    _sync(args.device)
    plain_tps = args.repeats * tokens / (time.perf_counter() - started)
    return {
        "update_tokens_per_s": learner_tps,
        "plain_step_tokens_per_s": plain_tps,
        "update_vs_plain": learner_tps / plain_tps,
    }


def measure_generation(args: argparse.Namespace, dtype: Any) -> dict[str, float]:
    import torch

    model = _model(args.scale, args.device, dtype)
    vocab = SHAPES[args.scale]["vocab_size"]
    rng = random.Random(1)
    out: dict[str, float] = {}
    for batch in (1, args.batch):
        ids = torch.tensor(
            [[rng.randrange(3, vocab) for _ in range(args.prompt)] for _ in range(batch)],
            device=args.device,
        )
        kwargs = dict(max_new_tokens=args.new_tokens, min_new_tokens=args.new_tokens,
                      do_sample=False, pad_token_id=0)  # fmt: skip
        with torch.no_grad():
            model.generate(ids, **{**kwargs, "max_new_tokens": 4, "min_new_tokens": 4})
            _sync(args.device)
            started = time.perf_counter()
            model.generate(ids, **kwargs)
            _sync(args.device)
        out[f"generate_batch{batch}_tokens_per_s"] = (
            batch * args.new_tokens / (time.perf_counter() - started)
        )
    out["generate_batched_vs_single"] = (
        out[f"generate_batch{args.batch}_tokens_per_s"] / out["generate_batch1_tokens_per_s"]
    )
    return out


#: Learner setups whose memory is measured against the planner: (micro-batch, sequence
#: length, activation checkpointing, log-prob chunk).
MEMORY_SETUPS = ((1, 1024, False, 0), (2, 2048, True, 2048), (4, 4096, True, 2048))


def measure_memory(args: argparse.Namespace) -> dict[str, Any]:
    """The planner's predicted peak against the measured one for a few learner setups of a
    Qwen3-shaped model built from its config (random weights), and the learner's
    throughput as MFU on the largest setup."""
    import torch
    from transformers import Qwen3Config, Qwen3ForCausalLM

    from spade_envs.trainer.learner import GRPOConfig, Learner
    from spade_envs.trainer.memory_plan import (
        ModelShape,
        TrainShape,
        measure_peak,
        plan_memory,
    )

    cuda = args.device.startswith("cuda")
    if args.memory_model == "tiny":
        config = {**SHAPES["tiny"], "head_dim": 16, "model_type": "qwen3"}
        setups = ((2, 64, False, 0), (2, 64, True, 32))
    else:
        shape_file = Path(__file__).resolve().parents[1] / "spade_envs/trainer/shapes"
        config = json.loads((shape_file / f"{args.memory_model}.json").read_text())
        setups = MEMORY_SETUPS
    shape = ModelShape.from_config(config)
    torch.manual_seed(0)
    fields = {k: v for k, v in config.items() if k not in ("architectures", "model_type")}
    with torch.device(args.device):
        model = Qwen3ForCausalLM(Qwen3Config(**fields)).to(getattr(torch, args.dtype)).eval()
    rows = []
    for micro_batch, seq_len, checkpointing, chunk in setups:
        grpo = GRPOConfig(learning_rate=1e-6, micro_batch=micro_batch, max_seq_len=seq_len,
                          activation_checkpointing=checkpointing, logprob_chunk=chunk)  # fmt: skip
        learner = Learner(model, grpo, seed=0)
        samples = _samples(2 * micro_batch, seq_len // 4, seq_len - seq_len // 4, shape.vocab)
        learner.step(samples)  # moments exist from here on, as in training
        _sync(args.device)
        if cuda:
            torch.cuda.reset_peak_memory_stats()
            before = torch.cuda.memory_allocated()
            started = time.perf_counter()
            learner.step(samples)
            _sync(args.device)
            seconds = time.perf_counter() - started
            measured = torch.cuda.max_memory_allocated()
        else:
            before = sum(p.numel() * p.element_size() for p in model.parameters()) + sum(
                t.numel() * t.element_size()
                for state in learner.optimizer.state.values()
                for t in state.values()
                if torch.is_tensor(t)
            )
            started = time.perf_counter()
            step = learner.step
            _, created = measure_peak(lambda step=step, samples=samples: step(samples))
            seconds = time.perf_counter() - started
            measured = before + created
        plan = plan_memory(
            shape,
            TrainShape(
                micro_batch,
                seq_len,
                args.dtype,
                activation_checkpointing=checkpointing,
                logprob_chunk=chunk,
                attention="flash" if cuda else "math",
                foreach=cuda,
            ),
        )
        tokens = 2 * micro_batch * seq_len
        rows.append(
            {
                "micro_batch": micro_batch,
                "seq_len": seq_len,
                "activation_checkpointing": checkpointing,
                "logprob_chunk": chunk,
                "predicted_gib": round(plan.peak / 2**30, 2),
                "measured_gib": round(measured / 2**30, 2),
                "predicted_vs_measured": round(plan.peak / measured, 3),
                "tokens_per_s": round(tokens / seconds, 1),
                # 6 N FLOPs per trained token (forward + backward), 8 N with recompute.
                "mfu": round((8 if checkpointing else 6) * shape.params * tokens / seconds
                             / (args.peak_tflops * 1e12), 4),
            }
        )  # fmt: skip
        del learner
        if cuda:
            torch.cuda.empty_cache()
    return {"memory_model": args.memory_model, "memory_params": shape.params, "memory": rows}


def measure_sharded(args: argparse.Namespace, dtype: Any) -> dict[str, Any]:
    """A sharded learner's save and resume on this device (world size 1)."""
    import tempfile

    import torch.distributed as dist

    from spade_envs.trainer.learner import GRPOConfig, Learner

    for key, value in (("MASTER_ADDR", "127.0.0.1"), ("MASTER_PORT", "29533"),
                       ("RANK", "0"), ("WORLD_SIZE", "1"), ("LOCAL_RANK", "0")):  # fmt: skip
        os.environ.setdefault(key, value)
    cuda = args.device.startswith("cuda")
    dist.init_process_group("nccl" if cuda else "gloo")
    try:
        vocab = SHAPES[args.scale]["vocab_size"]
        batches = [_samples(args.micro_batch * 2, 64, 64, vocab) for _ in range(3)]
        config = GRPOConfig(
            learning_rate=1e-4,
            micro_batch=args.micro_batch,
            max_seq_len=128,
            sharding="fsdp",
            logprob_chunk=64,
            activation_checkpointing=True,
        )

        def learner() -> Any:
            return Learner(_model(args.scale, args.device, dtype), config, seed=0)

        first = learner()
        assert first.sharded
        for batch in batches[:2]:
            first.step(batch)
        with tempfile.TemporaryDirectory() as directory:
            state = first.state_dict()
            _sync(args.device)
            started = time.perf_counter()
            first.save_shards(directory)
            save_seconds = time.perf_counter() - started
            first.step(batches[2])
            expected = {n: p.full_tensor().float().cpu() for n, p in first.model.named_parameters()}
            del first
            second = learner()
            second.load_state_dict(state, shards=directory)
            second.step(batches[2])
            got = {n: p.full_tensor().float().cpu() for n, p in second.model.named_parameters()}
        difference = max((got[n] - expected[n]).abs().max().item() for n in expected)
        return {"sharded_resume_max_difference": difference,
                "sharded_save_seconds": round(save_seconds, 3),
                "sharded_resume_exact": difference == 0.0}  # fmt: skip
    finally:
        dist.destroy_process_group()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--scale", choices=sorted(SHAPES), default="0.5b")
    parser.add_argument("--device", default="cuda")
    parser.add_argument("--dtype", choices=["bfloat16", "float32"], default="bfloat16")
    parser.add_argument("--samples", type=int, default=64)
    parser.add_argument("--prompt", type=int, default=256)
    parser.add_argument("--completion", type=int, default=256)
    parser.add_argument("--micro-batch", type=int, default=8)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--batch", type=int, default=32, help="generation batch")
    parser.add_argument("--new-tokens", type=int, default=128)
    parser.add_argument(
        "--memory-model",
        default="qwen3-4b",
        help="bundled shape whose memory is checked against the planner (tiny: a smoke run)",
    )
    parser.add_argument(
        "--peak-tflops", type=float, default=989.0, help="the GPU's dense bf16 TFLOP/s (MFU)"
    )
    parser.add_argument(
        "--skip", nargs="*", default=[], choices=["update", "generation", "memory", "sharded"]
    )
    args = parser.parse_args()

    import torch
    import transformers

    dtype = getattr(torch, args.dtype)
    model = _model(args.scale, "cpu", dtype)
    result: dict[str, Any] = {
        "device": torch.cuda.get_device_name(0) if args.device.startswith("cuda") else "cpu",
        "torch": torch.__version__,
        "transformers": transformers.__version__,
        "parameters": sum(p.numel() for p in model.parameters()),
        "dtype": args.dtype,
        "settings": vars(args),
    }
    del model
    started = time.perf_counter()
    if "update" not in args.skip:
        result.update(measure_update(args, dtype))
    if "generation" not in args.skip:
        result.update(measure_generation(args, dtype))
    if "memory" not in args.skip:
        result.update(measure_memory(args))
    if "sharded" not in args.skip:
        result.update(measure_sharded(args, dtype))
    result["seconds"] = time.perf_counter() - started
    text = json.dumps(result, indent=2)
    print(text)
    if os.environ.get("OUT"):
        Path(os.environ["OUT"], "gpu_check.json").write_text(text + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()
