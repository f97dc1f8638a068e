"""How fast is the corpus browser over 100,000 environments? Real HTTP, one run.

Builds (once; cached) a SQLite registry of 100,000 synthetic versions (the 32 seeds,
each renamed and varied, as ``registry_scale.py`` does), with play statistics for most
of them and hashing embeddings for all, starts ``spade-envs serve`` on 127.0.0.1 in a
child process, and times pages over HTTP: the list (filters, sorts, first and deep
pages, the hint-gain range), full-text and semantic search, environment pages and the
JSON API. Prints the median and 95th percentile of each against the 100 ms p95 target,
and each p95 as a ratio to that of ``/healthz`` measured in the same run (the server's
own per-request cost on this machine at this moment). Then a bounded load test: 50
concurrent clients on 127.0.0.1 send a fixed number of requests each over a mix of
pages; it prints throughput, latency percentiles and the count of errors by kind
(the target is zero). Last, the stall attack: one API play session of an environment
whose step never returns (a busy loop, or a wait on a lock that costs no CPU), hit with
``--attack-steps`` concurrent steps again and again, while a second client times
``/healthz``; it prints that p95 as a ratio to the same without the attack (target
at most 2x) and how the attacker's calls were answered.

    python benchmarks/web_latency.py [--n 100000] [--cache DIR] [--repeat 20] [--clients 50]
    python benchmarks/web_latency.py --n 2000 --attack-only   # the stall attack alone

The registry is cached in ``DIR`` (default ``$TMPDIR/spade-web-latency``) and reused by
later runs. Play statistics are fabricated (seeded) and written with one bulk INSERT
per 5,000 rows: ``Registry.record_play_stats`` commits each row on its own, which would
take most of an hour here and measures nothing this benchmark is about.
"""

from __future__ import annotations

import argparse
import datetime as dt
import os
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from registry_scale import build_corpus  # the same synthetic corpus

TARGET_P95_MS = 100.0
#: The stall attack's target: /healthz p95 under attack over p95 without.
TARGET_ATTACK_RATIO = 2.0
#: Words of the synthetic corpus's descriptions, for full-text queries.
WORDS = ("number", "hidden", "grid", "switch", "stack", "coin", "flight", "robot", "cell", "heap")


def build_registry(db: Path, n: int, seed: int = 0) -> None:
    """A registry of ``n`` versions with play statistics and hashing embeddings."""
    from sqlalchemy import text

    from spade_envs.memory import Memory, MemoryConfig
    from spade_envs.registry import Registry

    done = db.with_name(db.name + ".done")
    if done.exists():
        return
    db.unlink(missing_ok=True)  # a build that was interrupted starts over
    registry = Registry(f"sqlite:///{db}")
    started = time.perf_counter()
    rate = build_corpus(registry, n)
    print(f"   registered {n:,} versions ({rate:,.0f}/s)", file=sys.stderr, flush=True)

    rng = np.random.default_rng(seed)
    keys = [r.key for r in registry.iter_records()]
    now = dt.datetime.now(dt.timezone.utc)
    rows = []
    for key in keys:
        if rng.random() < 0.2:
            continue  # a fifth were never played
        for checkpoint in ("step-0", "step-100")[: 1 + int(rng.random() < 0.3)]:
            without = float(rng.beta(2, 3))
            with_hint = float(min(1.0, without + rng.normal(0.1, 0.15)))
            rows.append(
                {
                    "e": key,
                    "c": checkpoint,
                    "ph": 8,
                    "pn": 8,
                    "rh": with_hint,
                    "rn": without,
                    "w": float(rng.binomial(8, without) / 8),
                    "r": with_hint - without,
                    "u": now,
                }
            )
    insert = text(
        "INSERT INTO play_stats (environment_id, checkpoint, plays_with_hint, "
        "plays_without_hint, mean_return_with_hint, mean_return_without_hint, win_rate, "
        "hint_gain, updated_at) VALUES (:e, :c, :ph, :pn, :rh, :rn, :w, :r, :u)"
    )
    for start in range(0, len(rows), 5000):
        with registry.engine.begin() as conn:
            conn.execute(insert, rows[start : start + 5000])
    print(f"   {len(rows):,} play statistics", file=sys.stderr, flush=True)

    memory = Memory(registry, MemoryConfig(embedder="hashing", index="exact"))
    memory.sync(
        progress=lambda d, t: (
            d % 20_000 < 256 and print(f"   ... {d:,}/{t:,} embedded", file=sys.stderr, flush=True)
        )
    )
    registry.close()
    done.write_text(f"{n} versions built in {time.perf_counter() - started:.0f} s\n")


def start_server(db: Path) -> tuple[subprocess.Popen, str]:
    """``spade-envs serve`` on a free port of 127.0.0.1; returns the process and its URL."""
    command = [
        sys.executable, "-c", "from spade_envs.cli import main; main()", "serve",
        "--registry", str(db), "--port", "0", "--quiet", "--embedder", "hashing",
    ]  # fmt: skip
    process = subprocess.Popen(command, stdout=subprocess.PIPE, text=True)
    for line in process.stdout or ():
        if "Serving the corpus browser at " in line:
            return process, line.split(" at ", 1)[1].strip()
    raise SystemExit(f"the server did not start (exit code {process.wait()})")


def fetch(url: str) -> tuple[float, int, bytes]:
    start = time.perf_counter()
    try:
        with urllib.request.urlopen(url, timeout=120) as response:
            body = response.read()
            status = response.status
    except urllib.error.HTTPError as exc:
        body, status = exc.read(), exc.code
    return time.perf_counter() - start, status, body


def measure(base: str, paths: list[str], repeat: int) -> list[float]:
    """Seconds per request: every path ``repeat`` times, interleaved."""
    samples = []
    for _ in range(repeat):
        for path in paths:
            seconds, status, body = fetch(base + path)
            if status != 200:
                raise SystemExit(f"{path}: HTTP {status}: {body[:300]!r}")
            samples.append(seconds)
    return samples


STALL_SOURCES = {
    # What any model-written step can do: spin (time.sleep is virtual in a worker).
    "spin": """from spade_envs import TextEnv


class BenchSpinStep(TextEnv):
    skill = "logic"
    description = "Its step never returns (a busy loop)."
    max_turns = 3

    def _reset(self) -> str:
        return "Say anything."

    def _step(self, action: str):
        while True:
            pass
""",
    # A stall that costs no CPU: only the server's threads could suffer.
    "block": """import threading

from spade_envs import TextEnv

_HELD = threading.Lock()


class BenchBlockStep(TextEnv):
    skill = "logic"
    description = "Its step waits forever on a lock."
    max_turns = 3

    def _reset(self) -> str:
        return "Say anything."

    def _step(self, action: str):
        _HELD.acquire()
        _HELD.acquire()
        return "", 0.0, True
""",
}


def register_stall(db: Path, kind: str) -> str:
    """Register the stalling environment ``kind`` as validated (as an adversary with the
    database could; validation would refuse it); its ID."""
    from spade_envs.core.metadata import EnvMetadata
    from spade_envs.registry import Registry

    name = {"spin": "BenchSpinStep", "block": "BenchBlockStep"}[kind]
    registry = Registry(f"sqlite:///{db}")
    try:
        meta = EnvMetadata(name, "text", "logic", "stalls", 3, (0.0, 1.0), origin="designer")
        return registry.register(STALL_SOURCES[kind], meta, status="validated").id
    finally:
        registry.close()


def post_json(url: str, data: dict, timeout: float = 120) -> tuple[int, dict]:
    import json

    request = urllib.request.Request(
        url, data=json.dumps(data).encode(), headers={"Content-Type": "application/json"}
    )
    try:
        with urllib.request.urlopen(request, timeout=timeout) as response:
            return response.status, json.loads(response.read())
    except urllib.error.HTTPError as exc:
        return exc.code, json.loads(exc.read() or b"{}")


def stall_attack(base: str, env_id: str, steps: int, repeat: int, rounds: int = 3) -> dict:
    """/healthz of a second client while one session's steps stall, against without.

    The attacker opens a session, sends ``steps`` steps at once, waits for every answer
    and starts again, ``rounds`` times; the second client sends /healthz one after
    another all that time (and ``repeat`` times without the attack, before and after)."""
    import collections
    import threading

    quiet = measure(base, ["/healthz"], repeat)
    answers: collections.Counter[str] = collections.Counter()
    stop = threading.Event()
    lock = threading.Lock()

    def attacker() -> None:
        for _ in range(rounds):
            if stop.is_set():
                return
            status, body = post_json(base + "/api/v1/play", {"env": env_id, "seed": 0})
            if status != 201:
                with lock:
                    answers[f"start {status}"] += 1
                time.sleep(0.2)
                continue
            step = f"{base}/api/v1/play/{body['id']}/step"

            def one(step: str = step) -> None:
                try:
                    code, _ = post_json(step, {"action": "x"})
                    key = f"step {code}"
                except Exception as exc:  # counted, never dropped
                    key = type(exc).__name__
                with lock:
                    answers[key] += 1

            threads = [threading.Thread(target=one) for _ in range(steps)]
            for thread in threads:
                thread.start()
            for thread in threads:
                thread.join()

    thread = threading.Thread(target=attacker, daemon=True)
    thread.start()
    attacked: list[float] = []
    try:
        while thread.is_alive():
            attacked += measure(base, ["/healthz"], 1)
    finally:
        stop.set()
        thread.join(timeout=120)
    time.sleep(1.0)  # the last worker is stopped
    quiet += measure(base, ["/healthz"], repeat)  # before and after: the machine drifts
    quiet_p95 = float(np.percentile(quiet, 95))
    attacked_p95 = float(np.percentile(attacked, 95))
    return {
        "quiet_p95_ms": quiet_p95 * 1e3,
        "attacked_p95_ms": attacked_p95 * 1e3,
        "attacked_max_ms": max(attacked) * 1e3,
        "ratio": attacked_p95 / quiet_p95,
        "requests": len(attacked),
        "answers": dict(sorted(answers.items())),
    }


def print_attack(kind: str, steps: int, result: dict) -> None:
    verdict = "ok" if result["ratio"] <= TARGET_ATTACK_RATIO else "OVER"
    answers = ", ".join(f"{k}: {v}" for k, v in result["answers"].items())
    print(
        f"stall attack ({kind}, {steps} concurrent steps per session): /healthz p95 "
        f"{result['attacked_p95_ms']:.1f} ms (max {result['attacked_max_ms']:.1f} ms) over "
        f"{result['requests']} requests vs {result['quiet_p95_ms']:.1f} ms without: "
        f"{result['ratio']:.2f}x (target <= {TARGET_ATTACK_RATIO:g}x: {verdict}); "
        f"attacker's answers: {answers}"
    )


def load_test(base: str, paths: list[str], clients: int, per_client: int) -> dict:
    """``clients`` threads, each sending ``per_client`` requests (paths in turn, a fixed
    count: the test stops by itself); errors are counted by kind, never dropped."""
    import collections
    import threading

    latencies: list[float] = []
    errors: collections.Counter[str] = collections.Counter()
    lock = threading.Lock()

    def client(index: int) -> None:
        for i in range(per_client):
            path = paths[(index * 7 + i) % len(paths)]
            try:
                seconds, status, _ = fetch(base + path)
            except Exception as exc:  # a refused or reset connection is an error, counted
                with lock:
                    errors[type(exc).__name__] += 1
                continue
            with lock:
                if status == 200:
                    latencies.append(seconds)
                else:
                    errors[f"HTTP {status}"] += 1

    threads = [threading.Thread(target=client, args=(i,)) for i in range(clients)]
    started = time.perf_counter()
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    wall = time.perf_counter() - started
    return {
        "requests": clients * per_client,
        "ok": len(latencies),
        "errors": dict(errors),
        "wall_s": wall,
        "median_ms": statistics.median(latencies) * 1e3 if latencies else float("nan"),
        "p95_ms": float(np.percentile(latencies, 95)) * 1e3 if latencies else float("nan"),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--n", type=int, default=100_000, help="corpus size")
    parser.add_argument("--cache", default=str(Path(tempfile.gettempdir()) / "spade-web-latency"))
    parser.add_argument("--repeat", type=int, default=20, help="requests per measured page")
    parser.add_argument("--build-only", action="store_true")
    parser.add_argument(
        "--clients", type=int, default=50, help="concurrent clients of the load test"
    )
    parser.add_argument("--per-client", type=int, default=20, help="requests per load-test client")
    parser.add_argument(
        "--attack-steps", type=int, default=80, help="concurrent steps of the stall attack"
    )
    parser.add_argument(
        "--attack-kind", choices=("spin", "block", "both"), default="both",
        help="the stalling step: a busy loop, a wait on a lock, or both in turn",
    )  # fmt: skip
    parser.add_argument(
        "--attack-rounds", type=int, default=3, help="stalled sessions per attack (in turn)"
    )
    parser.add_argument(
        "--attack-only", action="store_true", help="skip the pages; run the stall attack"
    )
    args = parser.parse_args()
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    cache = Path(args.cache)
    cache.mkdir(parents=True, exist_ok=True)
    db = cache / f"registry-{args.n}.db"
    print(f"building or reusing {db}", file=sys.stderr, flush=True)
    build_registry(db, args.n)
    if args.build_only:
        return
    kinds = ("spin", "block") if args.attack_kind == "both" else (args.attack_kind,)
    stalls = {kind: register_stall(db, kind) for kind in kinds}
    if args.attack_only:
        process, base = start_server(db)
        try:
            attacks = {
                kind: stall_attack(
                    base.rstrip("/"), env, args.attack_steps, 5 * args.repeat, args.attack_rounds
                )
                for kind, env in stalls.items()
            }
        finally:
            process.terminate()
            process.wait(timeout=30)
        load = os.getloadavg()
        print(f"\nload average: {load[0]:.1f} (1 min) on {os.cpu_count()} CPUs")
        for kind, result in attacks.items():
            print_attack(kind, args.attack_steps, result)
        if any(r["ratio"] > TARGET_ATTACK_RATIO for r in attacks.values()):
            raise SystemExit("the stall attack slowed /healthz by more than the target")
        return

    started = time.perf_counter()
    process, base = start_server(db)
    ready = time.perf_counter() - started
    base = base.rstrip("/")
    try:
        # Novelty is computed in the background after start; wait so that sorting by
        # it measures the page, not a note that it is still being computed.
        deadline = time.monotonic() + 600
        while b"still being computed" in fetch(base + "/envs?sort=novelty")[2]:
            if time.monotonic() > deadline:
                raise SystemExit("novelty was not computed within 10 minutes")
            time.sleep(2)
        novelty_ready = time.perf_counter() - started
        pages = args.n // 50
        rng = np.random.default_rng(0)
        from spade_envs import seed_names

        names = seed_names()
        env_pages = [
            f"/env/{names[i % len(names)]}{i:06d}-v1" for i in rng.choice(args.n, 20, replace=False)
        ]
        groups = {
            "list: first page": ["/envs"],
            "list: deep pages (middle, last)": [f"/envs?page={pages // 2}", f"/envs?page={pages}"],
            "list: filter + sort (skill, kind/status, name)": [
                "/envs?skill=logic&sort=hint_gain",
                f"/envs?kind=tool&status=validated&sort=novelty&page={max(1, pages // 40)}",
                f"/envs?sort=name&page={pages * 3 // 4}",
            ],
            "list: hint-gain range, deep page": [
                "/envs?hint_gain_min=0.2&hint_gain_max=0.4&sort=hint_gain"
                f"&page={max(1, pages // 20)}",
            ],
            # Every full-text query is new (searches over the whole corpus are cached per
            # catalog snapshot, which the next row measures).
            "search: full text, each query new": [
                f"/envs?q={word}+{int(number)}"
                for word, number in zip(
                    rng.choice(WORDS, 4 * args.repeat), rng.integers(0, 1000, 4 * args.repeat)
                )
            ]
            + [f"/envs?q=%22{word}%22&skill=planning" for word in WORDS],
            "search: full text, next pages of a search": [
                f"/envs?q=maze&page={page}" for page in range(2, 2 + args.repeat)
            ],
            # Semantic results are cached per query too: every query here is new.
            "search: semantic, each query new": [
                f"/envs?mode=semantic&q={a}+{b}+{int(n)}"
                for a, b, n in zip(
                    rng.choice(WORDS, 3 * args.repeat),
                    rng.choice(
                        ("puzzle", "game", "tool", "search", "hidden", "path"), 3 * args.repeat
                    ),
                    rng.integers(0, 10_000, 3 * args.repeat),
                )
            ],
            "search: semantic, next pages of a search": [
                f"/envs?mode=semantic&q=find+a+path+through+a+maze&page={page}"
                for page in range(2, 2 + min(args.repeat, 19))
            ],
            "environment page (first view)": env_pages,
            # The same pages again: highlighted source, neighbours and example are kept.
            "environment page (viewed again)": list(env_pages),
            "overview": ["/"],
            "map (2,000 points)": ["/map"],
            "api: list, filter + sort, deep page": [
                "/api/v1/envs",
                "/api/v1/envs?skill=logic&sort=hint_gain",
                f"/api/v1/envs?page={pages // 2}",
            ],
            "api: one version": ["/api/v1" + p.replace("/env/", "/envs/") for p in env_pages],
        }
        baseline = measure(base, ["/healthz"], 5 * args.repeat)
        baseline_p95 = float(np.percentile(baseline, 95))
        for label, paths in groups.items():  # warm-up: caches of sort orders, not searches
            if "next pages" in label:  # the search itself (page 1); its next pages are measured
                measure(base, [paths[0].rsplit("&page=", 1)[0]], 1)
            elif "each query new" not in label:
                measure(base, paths[:1], 1)
        rows = []
        for label, paths in groups.items():
            repeat = 1 if len(paths) > 4 else args.repeat  # many paths: each once
            samples = measure(base, paths, repeat)
            rows.append(
                (label, statistics.median(samples), float(np.percentile(samples, 95)), len(samples))
            )
        load_paths = [
            "/envs", "/envs?skill=logic&sort=hint_gain", f"/envs?page={pages // 2}",
            "/envs?q=maze", *env_pages[:5], "/api/v1/envs?kind=tool", "/",
        ]  # fmt: skip
        loaded = load_test(base, load_paths, args.clients, args.per_client)
        attacks = {
            kind: stall_attack(base, env, args.attack_steps, 5 * args.repeat, args.attack_rounds)
            for kind, env in stalls.items()
        }
    finally:
        process.terminate()
        process.wait(timeout=30)
    load = os.getloadavg()
    print(
        f"\ncorpus: {args.n:,} versions ({db.stat().st_size / 1e6:,.0f} MB SQLite); server ready "
        f"in {ready:.1f} s, novelty computed after {novelty_ready:.1f} s"
    )
    print(
        f"load average during the run: {load[0]:.1f} (1 min), {load[1]:.1f} (5 min) on "
        f"{os.cpu_count()} CPUs\n"
    )
    print(
        f"/healthz (the baseline): p95 {baseline_p95 * 1e3:.1f} ms over {len(baseline)} requests\n"
    )
    print(f"| {'page':<46} | median ms | p95 ms | p95 / healthz | requests | p95 < 100 ms |")
    print(f"|{'-' * 48}|-----------|--------|---------------|----------|--------------|")
    for label, median, p95, count in rows:
        verdict = "ok" if p95 * 1e3 < TARGET_P95_MS else "OVER"
        print(
            f"| {label:<46} | {median * 1e3:9.1f} | {p95 * 1e3:6.1f} | "
            f"{p95 / baseline_p95:13.1f} | {count:8d} | {verdict:<12} |"
        )
    errors = ", ".join(f"{k}: {v}" for k, v in loaded["errors"].items()) or "none"
    print(
        f"\nload test: {args.clients} concurrent clients x {args.per_client} requests = "
        f"{loaded['requests']:,} requests in {loaded['wall_s']:.1f} s "
        f"({loaded['requests'] / loaded['wall_s']:.0f}/s); {loaded['ok']:,} answered 200; "
        f"median {loaded['median_ms']:.0f} ms, p95 {loaded['p95_ms']:.0f} ms; errors: {errors}"
    )
    print()
    for kind, result in attacks.items():
        print_attack(kind, args.attack_steps, result)
    if loaded["errors"]:
        raise SystemExit("the load test had errors")
    if any(r["ratio"] > TARGET_ATTACK_RATIO for r in attacks.values()):
        raise SystemExit("the stall attack slowed /healthz by more than the target")


if __name__ == "__main__":
    main()
