# expect: valid
"""Read a long web-server access log and answer an operations question about it.

The first observation is large (about 7,000-7,300 characters, under the 8,192 limit
by construction) and the answer is a string given in <answer>...</answer> tags, which a
plain TextEnv reads with ``extract_answer``.
"""

from __future__ import annotations

from collections import Counter, defaultdict

from spade_envs import TextEnv, answers_match

ENDPOINTS = ["/api/orders", "/api/cart", "/login", "/api/search", "/static/app.js", "/health"]
METHODS = {"/api/orders": "POST", "/api/cart": "PUT", "/login": "POST"}
LINES = 96
MAX_CHARS = 7_600


class AccessLogTriage(TextEnv):
    skill = "code"
    description = (
        "An on-call engineer's task: a web server access log (timestamp, client IP, method, "
        "path, status, latency, request id) is shown in full. Answer the question about it "
        "(which client caused the most server errors, which endpoint is slowest on average, "
        "or which request was the slowest failure) inside <answer></answer>. Two tries."
    )
    max_turns = 2

    def _reset(self) -> str:
        while True:
            text = self._generate()
            if text is not None and len(text) <= MAX_CHARS:
                break
        self.tries = 0
        return text

    def _generate(self) -> str | None:
        ips = [f"{self.rng.choice([10, 172, 192, 203])}.{self.rng.randint(0, 255)}."
               f"{self.rng.randint(0, 255)}.{self.rng.randint(1, 254)}" for _ in range(9)]
        rows = []
        second = self.rng.randint(0, 3000)
        for _ in range(LINES):
            second += self.rng.randint(1, 40)
            path = self.rng.choice(ENDPOINTS)
            status = self.rng.choices([200, 201, 304, 404, 500, 502, 503], [40, 8, 6, 6, 4, 3, 3])[0]
            latency = self.rng.randint(3, 90) if path in ("/health", "/static/app.js") else self.rng.randint(20, 900)
            rid = "".join(self.rng.choice("0123456789abcdef") for _ in range(8))
            rows.append((second, self.rng.choice(ips), METHODS.get(path, "GET"), path, status, latency, rid))
        errors = Counter(r[1] for r in rows if r[4] >= 500)
        by_path: dict[str, list[int]] = defaultdict(list)
        for r in rows:
            by_path[r[3]].append(r[5])
        averages = sorted(((sum(v) / len(v), p) for p, v in by_path.items()), reverse=True)
        failures = sorted(((r[5], r[6]) for r in rows if r[4] >= 500), reverse=True)
        kind = self.rng.choice(["client", "endpoint", "request"])
        if kind == "client":
            top = errors.most_common(2)
            if not top or (len(top) == 2 and top[0][1] == top[1][1]):
                return None
            self.question, self.answer = "Which client IP received the most 5xx responses?", top[0][0]
            self.clue = f"It received {top[0][1]} of them."
        elif kind == "endpoint":
            if len(averages) < 2 or averages[0][0] - averages[1][0] < 5:
                return None
            self.question, self.answer = "Which path has the highest average latency?", averages[0][1]
            self.clue = f"Its average latency is about {round(averages[0][0])} ms."
        else:
            if len(failures) < 2 or failures[0][0] == failures[1][0]:
                return None
            self.question = "What is the request id of the slowest request that failed with a 5xx?"
            self.answer = failures[0][1]
            self.clue = f"It took {failures[0][0]} ms."
        log = "\n".join(
            f"2024-05-17T{s // 3600 % 24:02d}:{s // 60 % 60:02d}:{s % 60:02d}Z {ip} {m} {p} {st} {lat}ms req={rid}"
            for s, ip, m, p, st, lat, rid in rows
        )
        return (
            f"access.log ({LINES} lines):\n{log}\n\nQuestion: {self.question}\n"
            "Reply with the answer in <answer></answer> tags. You have two tries."
        )

    def _step(self, action: str):
        self.tries += 1
        if answers_match(action[:4000], self.answer):
            return "Correct.", 1.0, True
        if self.tries >= 2:
            return f"Wrong again; the answer was {self.answer}.", 0.0, True
        return "Not right. One more try.", 0.0, False

    def hint(self) -> str:
        return f"{self.clue} Tally the log lines carefully rather than eyeballing them."

    def solution(self) -> list[str]:
        return [f"<answer>{self.answer}</answer>"]
