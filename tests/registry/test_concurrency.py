"""Many writers at once lose nothing and never register the same code twice; a writer
killed with SIGKILL mid-registration leaves no partial record."""

from __future__ import annotations

import dataclasses
import multiprocessing
import signal
import subprocess
import sys
import textwrap
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


#: The registration the writer is killed in (the ones before it complete).
KILLED_IN = 3


def test_writer_killed_mid_registration_leaves_no_partial_record(registry_url):
    Registry(registry_url).close()
    # The writer kills itself with SIGKILL from a SQLAlchemy hook right after the INSERT
    # of its KILLED_IN-th version ran: inside that transaction, before its commit, every
    # time (no sleep decides where the kill lands).
    script = textwrap.dedent(f"""
        import dataclasses, os, signal
        from sqlalchemy import event
        from spade_envs import describe, seed_class
        from spade_envs.registry import Registry
        from spade_envs.seeds import seed_source
        registry = Registry({registry_url!r})
        meta = dataclasses.replace(describe(seed_class("Mastermind")), name="CodeBreak")
        base = seed_source("Mastermind").replace("class Mastermind(", "class CodeBreak(")
        inserts = []

        @event.listens_for(registry.engine, "after_cursor_execute")
        def kill_inside(conn, cursor, statement, parameters, context, executemany):
            if statement.lstrip().upper().startswith("INSERT INTO ENVIRONMENTS"):
                inserts.append(statement)
                if len(inserts) == {KILLED_IN}:
                    print("killed in a transaction:", conn.in_transaction(), flush=True)
                    os.kill(os.getpid(), signal.SIGKILL)

        for i in range({KILLED_IN}):  # the last one never returns
            registry.register(base + "\\n# " + "x" * 50_000 + str(i) + "\\n", meta)
        print("not killed", flush=True)
    """)
    writer = subprocess.Popen([sys.executable, "-c", script], stdout=subprocess.PIPE, text=True)
    said, _ = writer.communicate(timeout=120)
    assert writer.returncode == -signal.SIGKILL, said
    assert said.strip() == "killed in a transaction: True", said
    registry = Registry(registry_url)
    rows = registry.list(limit=100_000)
    # The versions committed before the kill, whole; nothing of the one killed in.
    assert sorted(r.version for r in rows) == list(range(1, KILLED_IN)), rows
    for record in rows:
        assert record.source.endswith("\n") and len(record.source) > 50_000  # whole rows only
    # And the registry still takes writes.
    from spade_envs import describe, seed_class
    from spade_envs.seeds import seed_source

    after = registry.register(seed_source("Nim"), describe(seed_class("Nim")))
    assert after.id == "spade/Nim-v1"
    registry.close()
