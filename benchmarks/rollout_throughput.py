"""Rollout throughput: batched vs one-at-a-time plays of SmolLM2-135M on CPU, per backend.

Plays the same episodes twice with the real model: all of them live at once (one batched
model call per turn; default 16 concurrent episodes), then one episode at a time (the
sequential baseline, ``max_concurrent=1``), on each backend asked for: ``transformers``
(HF ``generate``, left-padded batches) and ``vllm`` (vLLM's engine, continuous batching and
prefix caching: a play's next turn re-sends its whole conversation, and the cache spares
the prefill of all but the new turn). Prints episodes/min and generated tokens/s of each,
their ratio (target: batched >= 4x sequential at 16 concurrent episodes for vLLM), a table
of both backends side by side, whether the two runs produced the same trajectories (they
should, under fixed sampling seeds), and the share of wall time spent in environment calls
(sandboxed) versus model calls.

    .venv-vllm/bin/python benchmarks/rollout_throughput.py --backend both   # one run, both
    .venv-vllm/bin/python benchmarks/rollout_throughput.py --backend vllm --no-prefix-cache
    python benchmarks/rollout_throughput.py --backend transformers --threads 1

vLLM runs from .venv-vllm (``make .venv-vllm``). On a 2-core machine shared with other
jobs, two OpenMP threads fighting for cores made batch-1 decoding of the transformers
backend about 7x slower than one thread; ``--threads 1`` is then the fair setting.

Never collected by pytest.
"""

from __future__ import annotations

import argparse
import os
import tempfile
import time
from typing import Any

ENVS = ("NumberGuess", "Mastermind", "SequenceRule", "HiddenFunction")


def _load(backend: str, args: argparse.Namespace) -> Any:
    from spade_envs.llm import TransformersChatModel, VLLMChatModel, smollm2_hf_dir

    directory = smollm2_hf_dir(args.cache_dir)
    if backend == "transformers":
        return TransformersChatModel(directory, dtype=args.dtype, batch_size=args.episodes)
    return VLLMChatModel(
        str(directory),
        name="smollm2",
        dtype=args.dtype,
        max_model_len=2048,
        enforce_eager=True,
        kv_cache_memory_bytes=2 << 30,
        enable_prefix_caching=not args.no_prefix_cache,
        seed=0,
    )


def _measure(backend: str, args: argparse.Namespace) -> dict[str, Any]:
    from spade_envs.agent import RolloutConfig, RolloutEngine, matched_specs, resolve_envs
    from spade_envs.registry import Registry

    started = time.perf_counter()
    model = _load(backend, args)
    print(f"{backend}: SmolLM2 loaded in {time.perf_counter() - started:.1f} s")
    results = {}
    with tempfile.TemporaryDirectory() as tmp:
        registry = Registry(f"sqlite:///{tmp}/registry.db")
        targets = resolve_envs(ENVS, registry)
        plays = max(1, args.episodes // len(targets))
        specs = matched_specs([t.env_id for t in targets], plays)[: args.episodes]
        for label, concurrent in (("batched", args.episodes), ("sequential", 1)):
            config = RolloutConfig(
                isolation=args.isolation,
                max_concurrent=concurrent,
                max_turns=args.turns,
                max_tokens=args.max_tokens,
                temperature=0.7,
                seed=0,
            )
            engine = RolloutEngine(model, config, registry=registry)
            episodes = engine.run(specs, targets)
            results[label] = (episodes, engine.stats)
            s = engine.stats
            if s.failures.failed:
                print(f"  {label}: {s.failures.failed} plays failed: {s.failures.first_error}")
            print(
                f"{backend:>12} {label:>10}: {s.episodes} episodes, {s.turns} turns, "
                f"{s.model_calls} model calls, "
                f"{s.generated_tokens} tokens in {s.wall_seconds:.1f} s: "
                f"{60 * s.episodes / s.wall_seconds:.2f} episodes/min, "
                f"{s.generated_tokens / s.wall_seconds:.1f} tokens/s; "
                f"model {100 * s.model_seconds / s.wall_seconds:.1f}%, "
                f"environments {100 * s.env_seconds / s.wall_seconds:.2f}% of wall time"
            )
        registry.close()
    model.close()
    (b_eps, b), (s_eps, s) = results["batched"], results["sequential"]
    # Actions and token ids must match exactly; log-probabilities of a padded batch differ
    # from an unpadded one in the last float digits, so they are compared loosely.
    same = all(
        [(t.action, t.token_ids) for t in x.turns] == [(t.action, t.token_ids) for t in y.turns]
        and all(
            abs(p - q) < 1e-3
            for tx, ty in zip(x.turns, y.turns)
            for p, q in zip(tx.logprobs, ty.logprobs)
        )
        for x, y in zip(b_eps, s_eps)
    )
    return {
        "batched": b.generated_tokens / b.wall_seconds,
        "sequential": s.generated_tokens / s.wall_seconds,
        "episodes_ratio": (b.episodes / b.wall_seconds) / (s.episodes / s.wall_seconds),
        "same": same,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--backend", choices=["transformers", "vllm", "both"], default="both",
        help="both: one run, the two backends side by side (needs .venv-vllm)",
    )  # fmt: skip
    parser.add_argument("--episodes", type=int, default=16, help="concurrent episodes")
    parser.add_argument("--turns", type=int, default=3, help="max turns per episode")
    parser.add_argument("--max-tokens", type=int, default=48)
    parser.add_argument("--dtype", choices=["float32", "bfloat16"], default="float32")
    parser.add_argument("--isolation", choices=["sandbox", "none"], default="sandbox")
    parser.add_argument("--threads", type=int, default=0, help="torch threads (0: default)")
    parser.add_argument("--no-prefix-cache", action="store_true", help="vLLM without it")
    parser.add_argument("--cache-dir", default=None, help="converted-model cache")
    args = parser.parse_args()

    import torch

    if args.threads:
        torch.set_num_threads(args.threads)
    print(f"torch threads {torch.get_num_threads()}, {os.cpu_count()} CPUs")
    backends = ["transformers", "vllm"] if args.backend == "both" else [args.backend]
    rows = {backend: _measure(backend, args) for backend in backends}
    print(
        f"\n{'backend':>12} | {'batched tok/s':>13} | {'sequential tok/s':>16} | "
        f"{'ratio':>6} | {'episodes ratio':>14} | same trajectories"
    )
    for backend, row in rows.items():
        print(
            f"{backend:>12} | {row['batched']:>13.1f} | {row['sequential']:>16.1f} | "
            f"{row['batched'] / row['sequential']:>5.2f}x | {row['episodes_ratio']:>13.2f}x | "
            f"{row['same']}"
        )
    print(f"target: batched >= 4x sequential at {args.episodes} concurrent episodes (vLLM)")


if __name__ == "__main__":
    main()
