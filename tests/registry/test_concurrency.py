"""Many writers at once lose nothing and never register the same code twice; a writer
killed with SIGKILL mid-registration leaves no partial record."""

from __future__ import annotations

import dataclasses
import multiprocessing
import signal
import subprocess
import sys
import textwrap
import time
from collections import defaultdict

from spade_envs.registry import Registry

WRITERS = 8
VARIANTS = 6


def _writer(url: str, worker: int) -> list[str]:
    from spade_envs import describe, seed_class
    from spade_envs.registry import Registry
    from spade_envs.seeds import seed_source

    registry = Registry(url)
    ids = []
    # Not under the seed's name: that is reserved for the seed's own code.
    meta = dataclasses.replace(describe(seed_class("NumberGuess")), name="OrbitGuess")
    base = seed_source("NumberGuess").replace("class NumberGuess(", "class OrbitGuess(")
    # Every writer registers the same VARIANTS sources, in a different order.
    for i in range(VARIANTS):
        variant = (i + worker) % VARIANTS
        ids.append(registry.register(base + f"\n# variant {variant}\n", meta).id)
    registry.close()
    return ids


def test_eight_concurrent_writers(registry_url):
    Registry(registry_url).close()  # create the schema once, before the race
    with multiprocessing.get_context("spawn").Pool(WRITERS) as pool:
        results = pool.starmap(_writer, [(registry_url, w) for w in range(WRITERS)])
    registry = Registry(registry_url)
    rows = registry.list(limit=1000)
    assert len(rows) == VARIANTS  # each distinct source exactly once
    assert sorted(r.version for r in rows) == list(range(1, VARIANTS + 1))
    by_source = defaultdict(set)
    for ids in results:
        for variant_id in ids:
            by_source[registry.get(variant_id).sha256].add(variant_id)
    assert all(len(ids) == 1 for ids in by_source.values())  # everyone agrees on each ID
    registry.close()


def test_writer_killed_mid_registration_leaves_no_partial_record(registry_url):
    Registry(registry_url).close()
    script = textwrap.dedent(f"""
        import dataclasses
        from spade_envs import describe, seed_class
        from spade_envs.registry import Registry
        from spade_envs.seeds import seed_source
        registry = Registry({registry_url!r})
        meta = dataclasses.replace(describe(seed_class("Mastermind")), name="CodeBreak")
        base = seed_source("Mastermind").replace("class Mastermind(", "class CodeBreak(")
        print("ready", flush=True)
        i = 0
        while True:  # bounded by the SIGKILL below
            registry.register(base + "\\n# " + "x" * 50_000 + str(i) + "\\n", meta)
            i += 1
    """)
    writer = subprocess.Popen([sys.executable, "-c", script], stdout=subprocess.PIPE, text=True)
    assert writer.stdout.readline().strip() == "ready"
    time.sleep(1.0)
    writer.send_signal(signal.SIGKILL)
    writer.wait()
    writer.stdout.close()
    registry = Registry(registry_url)
    rows = registry.list(limit=100_000)
    assert rows, "the writer should have registered something before it was killed"
    assert sorted(r.version for r in rows) == list(range(1, len(rows) + 1))
    for record in rows:
        assert record.source.endswith("\n") and len(record.source) > 50_000  # whole rows only
    # And the registry still takes writes.
    from spade_envs import describe, seed_class
    from spade_envs.seeds import seed_source

    after = registry.register(seed_source("Nim"), describe(seed_class("Nim")))
    assert after.id == "spade/Nim-v1"
    registry.close()
