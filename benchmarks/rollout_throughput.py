"""Rollout throughput: batched vs one-at-a-time plays of SmolLM2-135M on CPU.

Plays the same episodes twice with the real model: all of them live at once (one batched
model call per turn; default 16 concurrent episodes), then one episode at a time (the
sequential baseline, ``max_concurrent=1``). Prints episodes/min and generated tokens/s of
each, their ratio (target: batched >= 4x sequential at 16 concurrent episodes), whether
the two runs produced the same trajectories (they should, under fixed sampling seeds),
and the share of wall time spent in environment calls (sandboxed) versus model calls.

    python benchmarks/rollout_throughput.py                      # 16 episodes, 3 turns, 48 tokens
    python benchmarks/rollout_throughput.py --turns 2 --max-tokens 32 --isolation none
    python benchmarks/rollout_throughput.py --threads 1   # a small CPU shared with other jobs

On a 2-core machine shared with other jobs, two OpenMP threads fighting for cores made
batch-1 decoding about 7x slower than one thread; ``--threads 1`` is then the fair setting.

Never collected by pytest.
"""

from __future__ import annotations

import argparse
import os
import tempfile
import time

ENVS = ("NumberGuess", "Mastermind", "SequenceRule", "HiddenFunction")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--episodes", type=int, default=16, help="concurrent episodes")
    parser.add_argument("--turns", type=int, default=3, help="max turns per episode")
    parser.add_argument("--max-tokens", type=int, default=48)
    parser.add_argument("--isolation", choices=["sandbox", "none"], default="sandbox")
    parser.add_argument("--threads", type=int, default=0, help="torch threads (0: default)")
    parser.add_argument("--cache-dir", default=None, help="converted-model cache")
    args = parser.parse_args()

    import torch

    from spade_envs.agent import RolloutConfig, RolloutEngine, matched_specs, resolve_envs
    from spade_envs.llm import load_model
    from spade_envs.registry import Registry

    if args.threads:
        torch.set_num_threads(args.threads)
    started = time.perf_counter()
    model = load_model("smollm2", cache_dir=args.cache_dir, batch_size=args.episodes)
    print(
        f"SmolLM2 loaded in {time.perf_counter() - started:.1f} s; "
        f"torch threads {torch.get_num_threads()}, {os.cpu_count()} CPUs"
    )
    with tempfile.TemporaryDirectory() as tmp:
        registry = Registry(f"sqlite:///{tmp}/registry.db")
        targets = resolve_envs(ENVS, registry)
        plays = max(1, args.episodes // len(targets))
        specs = matched_specs([t.env_id for t in targets], plays)[: args.episodes]
        results = {}
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
            print(
                f"{label:>10}: {s.episodes} episodes, {s.turns} turns, "
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
        [(t.action, t.token_ids) for t in a.turns] == [(t.action, t.token_ids) for t in b.turns]
        and all(
            abs(x - y) < 1e-3
            for ta, tb in zip(a.turns, b.turns)
            for x, y in zip(ta.logprobs, tb.logprobs)
        )
        for a, b in zip(b_eps, s_eps)
    )
    speedup = (b.episodes / b.wall_seconds) / (s.episodes / s.wall_seconds)
    token_speedup = (b.generated_tokens / b.wall_seconds) / (s.generated_tokens / s.wall_seconds)
    print(
        f"batched / sequential: {speedup:.2f}x episodes/min, {token_speedup:.2f}x tokens/s "
        f"(target >= 4x at 16 concurrent episodes)"
    )
    print(f"same trajectories in both runs (actions, tokens; log-probs within 1e-3): {same}")


if __name__ == "__main__":
    main()
