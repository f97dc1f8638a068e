"""Does the memory planner predict what the learner holds? Measured in one run on the CPU.

For three Llama-shaped models with random weights (no download), one GRPO step (two
micro-batches, so gradients accumulate while activations exist, as in training) of the
real learner (:class:`spade_envs.trainer.learner.Learner`, float32) is measured with
:func:`spade_envs.trainer.memory_plan.measure_peak` (every tensor the step creates, until
it is freed), after a first step so the optimizer's moments exist as in training; the
planner's prediction for the same setup (CPU attention) is printed beside it, as a ratio.
The lean options (activation checkpointing, log-probs in chunks) are measured on the
middle model, against the plain step of the same run.

With ``--sharding``, the step time of the learner sharded (FSDP2) against replicated
(DDP) on 2 CPU ranks (gloo, ``torchrun``), the median of alternating blocks of steps; and
the sharded learner's checkpoint written shard by shard against gathered whole on rank 0.

    python benchmarks/learner_memory.py [--sharding]
"""

from __future__ import annotations

import argparse
import os
import socket
import statistics
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

SIZES = {
    "small": dict(hidden_size=256, num_hidden_layers=4, intermediate_size=688, vocab_size=4096),
    "medium": dict(hidden_size=512, num_hidden_layers=6, intermediate_size=1376, vocab_size=8192),
    "large": dict(hidden_size=768, num_hidden_layers=8, intermediate_size=2048, vocab_size=16384),
}
HEADS = dict(num_attention_heads=8, num_key_value_heads=4, tie_word_embeddings=True)


def measured_and_predicted(cfg: dict, micro_batch: int, seq_len: int, **grpo) -> tuple[int, int]:
    from spade_envs.trainer.memory_plan import check_on_cpu

    return check_on_cpu(cfg, micro_batch, seq_len, **grpo)


def sharded_worker(steps: int) -> None:
    """One rank (under torchrun): time ``steps`` learner steps, DDP and FSDP2 in
    alternating blocks; rank 0 prints the medians."""
    import torch
    from transformers import LlamaConfig, LlamaForCausalLM

    from spade_envs.trainer.distributed import init_distributed, shutdown
    from spade_envs.trainer.learner import GRPOConfig, Learner
    from spade_envs.trainer.samples import Sample

    torch.set_num_threads(1)
    info = init_distributed("gloo")
    cfg = {**SIZES["medium"], **HEADS}
    samples = [
        Sample("agent", [1] * 8, [(i * 7 + j) % 8192 for j in range(120)], float(i % 2), "g")
        for i in range(8)
    ]
    learners = {}
    for sharding in ("ddp", "fsdp"):
        torch.manual_seed(0)
        model = LlamaForCausalLM(LlamaConfig(**cfg))
        config = GRPOConfig(micro_batch=2, max_seq_len=128, learning_rate=1e-5, sharding=sharding)
        learners[sharding] = Learner(model, config)
        learners[sharding].step(info.shard(samples))  # warm up
    times: dict[str, list[float]] = {"ddp": [], "fsdp": []}
    for _ in range(steps):
        for sharding, learner in learners.items():
            started = time.perf_counter()
            learner.step(info.shard(samples))
            times[sharding].append(time.perf_counter() - started)
    saves = checkpoint_times(learners["fsdp"], info.is_main)
    if info.is_main:
        ddp, fsdp = statistics.median(times["ddp"]), statistics.median(times["fsdp"])
        params = sum(p.numel() for p in LlamaForCausalLM(LlamaConfig(**cfg)).parameters())
        print(
            f"sharded checkpoint: shard by shard {saves['shards_s']:.2f} s, the largest file "
            f"{saves['shard_mib']:.1f} MiB; gathered on rank 0 {saves['gathered_s']:.2f} s, "
            f"{saves['gathered_mib']:.1f} MiB whole on rank 0 "
            f"({saves['gathered_mib'] / saves['shard_mib']:.2f}x the largest shard)"
        )
        print(
            f"learner step on 2 CPU ranks ({params / 1e6:.0f}M parameters, 8 x 128 tokens): "
            f"ddp {ddp:.2f} s, fsdp {fsdp:.2f} s: fsdp/ddp {fsdp / ddp:.2f}x"
        )
    shutdown()


def checkpoint_times(learner: object, is_main: bool) -> dict[str, float]:
    """A sharded learner's checkpoint written shard by shard (what the trainer does) and,
    as the baseline in the same run, gathered whole on rank 0 and saved there (what it
    did before): seconds, and the most any one rank holds or writes."""
    import tempfile
    from pathlib import Path

    import torch
    from torch.distributed.checkpoint.state_dict import StateDictOptions, get_state_dict

    from spade_envs.trainer.distributed import all_gather_objects, barrier

    mib = 2**20
    directory = all_gather_objects(tempfile.mkdtemp(prefix="spade-ckpt-"))[0]
    barrier()
    started = time.perf_counter()
    learner.save_shards(Path(directory) / "shards")
    barrier()
    shards_s = time.perf_counter() - started
    largest = max(p.stat().st_size for p in (Path(directory) / "shards").glob("*.distcp"))
    started = time.perf_counter()
    options = StateDictOptions(full_state_dict=True, cpu_offload=True)
    weights, optimizer = get_state_dict(learner.model, learner.optimizer, options=options)
    held = 0
    if is_main:
        torch.save({"model": weights, "optimizer": optimizer}, Path(directory) / "whole.pt")
        held = (Path(directory) / "whole.pt").stat().st_size
    barrier()
    gathered_s = time.perf_counter() - started
    return {"shards_s": shards_s, "shard_mib": largest / mib, "gathered_s": gathered_s,
            "gathered_mib": held / mib}  # fmt: skip


def sharding_time(steps: int) -> None:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    command = [sys.executable, "-m", "torch.distributed.run", "--standalone", "--nnodes=1",
               "--nproc_per_node=2", f"--master_port={port}", __file__, "--worker",
               str(steps)]  # fmt: skip
    env = {**os.environ, "OMP_NUM_THREADS": "1"}
    done = subprocess.run(command, env=env, capture_output=True, text=True, check=False)
    if done.returncode != 0:
        raise SystemExit(done.stdout[-2000:] + done.stderr[-3000:])
    print("\n".join(done.stdout.strip().splitlines()[-2:]))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--sharding", action="store_true", help="also time FSDP2 vs DDP")
    parser.add_argument("--steps", type=int, default=5, help="timed steps of each (--sharding)")
    parser.add_argument("--worker", type=int, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.worker is not None:
        sharded_worker(args.worker)
        return
    mib = 2**20
    print("model     setup                        measured   predicted   ratio")
    plain_medium = 0
    for name, size in SIZES.items():
        cfg = {**size, **HEADS}
        measured, predicted = measured_and_predicted(cfg, 4, 256)
        plain_medium = measured if name == "medium" else plain_medium
        print(
            f"{name:<9} {'plain, 4 x 256':<28} {measured / mib:7.1f} MiB {predicted / mib:7.1f} MiB"
            f"   {predicted / measured:.2f}"
        )
    cfg = {**SIZES["medium"], **HEADS}
    for label, grpo in (
        ("activation checkpointing", {"activation_checkpointing": True}),
        ("log-probs in chunks of 128", {"logprob_chunk": 128}),
        ("both", {"activation_checkpointing": True, "logprob_chunk": 128}),
    ):
        measured, predicted = measured_and_predicted(cfg, 4, 256, **grpo)
        print(
            f"{'medium':<9} {label:<28} {measured / mib:7.1f} MiB {predicted / mib:7.1f} MiB"
            f"   {predicted / measured:.2f}   ({measured / plain_medium:.2f}x the plain step)"
        )
    if args.sharding:
        sharding_time(args.steps)


if __name__ == "__main__":
    main()
