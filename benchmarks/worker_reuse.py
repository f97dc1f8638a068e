"""Worker reuse in rollouts: a fresh sandboxed worker per play vs one worker handed from
play to play of the same version (``RolloutConfig.episodes_per_worker``), same run.

The model is a constant reply (no model time), so what is measured is the environments'
side of a rollout: opening, resetting, stepping and closing sandboxed instances, and the
replay audits that make reuse safe (they run in fresh workers and are counted). Prints
each setting's environment seconds, audits, hand-overs and plays per second, and the
ratio against one worker per play. Plays of one version that are live at the same time
each need a worker of their own, so with ``--concurrency`` plays at once the first wave of
each (version, hint) pair opens fresh workers and the rest can take theirs over.

    python benchmarks/worker_reuse.py
    python benchmarks/worker_reuse.py --plays 16 --concurrency 8

Never collected by pytest.
"""

from __future__ import annotations

import argparse
import tempfile

from spade_envs.llm import ChatModel, Completion

ENVS = ("NumberGuess", "Mastermind", "SequenceRule", "HiddenFunction")


class ConstantModel(ChatModel):
    """Answers every turn with the same short guess, instantly."""

    name = "constant"

    def generate(self, conversations, params=None):
        reply = "\\boxed{1}"
        return [Completion(text=reply, token_ids=(1, 2, 3)) for _ in conversations]


def measure(per_worker: int, args: argparse.Namespace, registry, targets, specs) -> dict:
    """One rollout of ``specs`` with ``per_worker`` episodes per sandboxed instance."""
    from spade_envs.agent import RolloutConfig, RolloutEngine

    config = RolloutConfig(
        max_concurrent=args.concurrency,
        max_turns=args.turns,
        seed=0,
        episodes_per_worker=per_worker,
    )
    engine = RolloutEngine(ConstantModel(), config, registry=registry)
    engine.run(specs, targets)
    s = engine.stats
    if s.failures.failed:
        print(f"  {s.failures.failed} plays failed: {s.failures.first_error}")
    print(
        f"episodes_per_worker={per_worker}: {s.episodes} plays, {s.turns} turns in "
        f"{s.wall_seconds:.2f} s ({s.episodes / s.wall_seconds:.1f} plays/s); "
        f"environments {s.env_seconds:.2f} s, {s.audits} audits {s.audit_seconds:.2f} s; "
        f"{s.reused_workers} plays took over a worker; quarantined {s.quarantined}"
    )
    return {"wall": s.wall_seconds, "env": s.env_seconds, "plays": s.episodes}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--plays", type=int, default=8, help="plays of each environment")
    parser.add_argument("--concurrency", type=int, default=4, help="plays live at once")
    parser.add_argument("--turns", type=int, default=4)
    parser.add_argument("--reuse", type=int, default=8, help="episodes_per_worker to compare")
    args = parser.parse_args()

    from spade_envs.agent import matched_specs, resolve_envs
    from spade_envs.registry import Registry

    with tempfile.TemporaryDirectory() as tmp:
        registry = Registry(f"sqlite:///{tmp}/registry.db")
        targets = resolve_envs(ENVS, registry)
        specs = matched_specs([t.env_id for t in targets], args.plays)
        # A first run warms what both settings share (imports, the zygotes' pools).
        measure(args.reuse, args, registry, targets, specs[: len(targets)])
        fresh = measure(1, args, registry, targets, specs)
        reused = measure(args.reuse, args, registry, targets, specs)
        registry.close()
    print(
        f"reuse vs a fresh worker per play: environment time "
        f"{fresh['env'] / reused['env']:.2f}x less, plays/s "
        f"{(reused['plays'] / reused['wall']) / (fresh['plays'] / fresh['wall']):.2f}x"
    )


if __name__ == "__main__":
    main()
