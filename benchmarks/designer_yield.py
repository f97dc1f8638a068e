"""What does each designer choice buy? Yield of one model by mode and repair, in one run.

For each condition (mode ``new`` or ``edit``, with and without a repair round) the
designer attempts ``--n`` environments into a fresh registry that holds the 32 seeds
(the memory's references and the edit mode's parents). Prints, per condition: how
many replies were generated, parsed, valid, novel and registered, those counts per
minute of wall time, and the top rejection reasons; the model is loaded once.

    python benchmarks/designer_yield.py [--model smollm2] [--n 8] [--max-tokens 768]
"""

from __future__ import annotations

import argparse
import os
import tempfile
import time


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--model", default="smollm2")
    parser.add_argument("--n", type=int, default=8, help="attempts per condition")
    parser.add_argument("--max-tokens", type=int, default=768)
    parser.add_argument("--batch-size", type=int, default=4)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--skill", default="math")
    args = parser.parse_args()
    os.environ.setdefault("HF_HUB_OFFLINE", "1")

    from spade_envs import describe, seed_class
    from spade_envs.corpus import sample_corpus
    from spade_envs.generator import Designer, DesignerConfig
    from spade_envs.llm import load_model
    from spade_envs.memory import HashingEmbedder, Memory, MemoryConfig
    from spade_envs.registry import Registry
    from spade_envs.seeds import seed_names, seed_source
    from spade_envs.validation import Validator

    corpus = sample_corpus()
    start = time.perf_counter()
    model = load_model(args.model)
    print(f"model {model.name} loaded in {time.perf_counter() - start:.1f} s")
    rows = []
    with tempfile.TemporaryDirectory() as tmp, Validator("fast", pool_size=2) as validator:
        for mode, repair in (("new", 0), ("new", 1), ("edit", 0), ("edit", 1)):
            registry = Registry(f"sqlite:///{tmp}/{mode}-{repair}.db")
            registry.register_many(
                [(seed_source(n), describe(seed_class(n))) for n in seed_names()],
                status="validated",
            )
            memory = Memory(registry, MemoryConfig(index="exact"), embedder=HashingEmbedder())
            config = DesignerConfig(
                n=args.n,
                skill=args.skill,
                mode=mode,
                repair_rounds=repair,
                budget="fast",
                batch_size=args.batch_size,
                max_tokens=args.max_tokens,
                seed=args.seed,
            )
            designer = Designer(model, registry, memory, corpus, config, validator=validator)
            report = designer.run()
            rows.append((mode, repair, report))
            print(report.table(top=3), flush=True)
            registry.close()
    model.close()

    print()
    header = "mode  repair  generated parsed valid novel registered  per minute (gen/valid/novel)"
    print(header)
    for mode, repair, report in rows:
        c, minutes = report.counts, report.seconds / 60
        print(
            f"{mode:<5} {repair:>6}  {c['generated']:>9} {c['parsed']:>6} {c['valid']:>5} "
            f"{c['novel']:>5} {c['registered']:>10}  "
            f"{c['generated'] / minutes:6.1f} / {c['valid'] / minutes:.2f} / "
            f"{c['novel'] / minutes:.2f}  ({report.seconds:.0f} s)"
        )


if __name__ == "__main__":
    main()
