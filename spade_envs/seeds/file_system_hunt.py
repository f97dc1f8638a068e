"""Find a configuration value by following references between files on a virtual disk.

The disk is an in-memory dict ``{path: text}``. A service's start file sets a key either
to a value, to ``@name`` (the value of ``name``, defined in some other file: find it with
grep) or to ``from /path`` (that file sets the same key: cat it). Other services have
their own chains, so grepping the key name alone turns up decoys.
"""

from __future__ import annotations

import json
from typing import ClassVar

from spade_envs import ToolEnv, ToolError, parse_number

# hole: service names (at least 6 distinct lowercase words, no slashes)
_SERVICES = ["billing", "search", "mailer", "reports", "gateway", "scheduler", "uploads"]
# hole: configuration keys that may be asked about (lowercase words with underscores)
_KEYS = ["max_connections", "timeout_ms", "cache_mb", "worker_count", "queue_depth"]
_WORDS = [
    "amber",
    "basalt",
    "cedar",
    "delta",
    "fjord",
    "garnet",
    "harbor",
    "juniper",
    "kestrel",
    "lumen",
    "maple",
    "nimbus",
    "onyx",
    "quartz",
    "raven",
    "tundra",
]
_DIRS = ["/etc/shared", "/opt/profiles", "/srv/common", "/var/lib/conf", "/home/ops/tuning"]
_FILES = ["defaults.conf", "pools.conf", "limits.conf", "overrides.conf", "site.conf"]
_NOISE = {
    "/home/ops/README.txt": "Config syntax:\n  key = value\n  key = @name   (value of name, "
    "set in another file)\n  key = from /path   (that file sets key)\n",
    "/var/log/deploy.log": "deploy ok\nreloaded configuration\nwarning: cache cold\n",
}


def _call(name: str, **arguments: object) -> str:
    return f"<tool_call>{json.dumps({'name': name, 'arguments': arguments})}</tool_call>"


def _clean(path: str) -> str:
    """Normalise a path: one leading slash, no empty parts, no trailing slash."""
    return "/" + "/".join(part for part in path[:300].split("/") if part)


class FileSystemHunt(ToolEnv):
    skill = "code"
    # hole: the task description the agent is given (keep it true to the rules)
    description = (
        "A virtual disk holds service configuration files that refer to one another "
        "(key = @name: look up where name is set; key = from /path: open that file). "
        "Starting from a service's config file, follow the references with ls, cat and "
        "grep to find the effective value of a key, and answer it with <answer>value</answer>."
    )
    # hole: turns allowed (the chain needs hops + 2) [6, 30]
    max_turns = 12
    # hole: hops in the reference chain (1-4) and services with their own chains (1-6) [1, 6]
    knobs: ClassVar[dict[str, int]] = {"hops": 3, "services": 3}
    # What must hold between the holes for the description to be true and the task hard.
    hole_relations = (
        "1 <= hops <= 4",
        "1 <= services <= 6",
        "hops + 2 <= max_turns",
        "services <= len(_SERVICES)",
        "len(_SERVICES) >= 6",
    )

    def _reset(self) -> str:
        hops, services = max(1, min(self.hops, 4)), max(1, min(self.services, 6))
        self.key = self.rng.choice(_KEYS)
        names = self.rng.sample(_SERVICES, services)
        pairs = [f"{a}_{b}" for a in _WORDS for b in _WORDS if a != b]
        anchors = iter(self.rng.sample(pairs, hops * services))
        slots = iter(self.rng.sample([f"{d}/{f}" for d in _DIRS for f in _FILES], hops * services))
        self.files: dict[str, str] = dict(_NOISE)
        for index, service in enumerate(names):
            kinds = [self.rng.choice(["anchor", "path"]) for _ in range(hops)]
            if index == 0 and hops >= 2:  # the real chain needs both cat and grep
                kinds[:2] = self.rng.sample(["anchor", "path"], 2)
            chain, final_path, value = self._write_chain(service, kinds, anchors, slots)
            if index == 0:
                self.service, self.chain, self.final_path, self.value = (
                    service,
                    chain,
                    final_path,
                    value,
                )
        self.start = f"/srv/{self.service}/service.conf"
        return (
            f"Which value of {self.key} does the {self.service} service use? Its configuration "
            f"starts in {self.start}. 'key = @name' means: the value of name, set in another "
            "file; 'key = from /path' means: that file sets the key. Tools: ls(path), "
            "cat(path), grep(pattern) (plain substring). Finish with <answer>value</answer>."
        )

    def _write_chain(self, service, kinds, anchors, slots):
        """Write one service's chain; return its hops [(kind, target)], last file and value."""
        path, name, hops = f"/srv/{service}/service.conf", self.key, []
        lines = [f"# {service} service", f"service = {service}"]
        for kind in kinds:
            nxt = next(slots)
            target = next(anchors) if kind == "anchor" else nxt
            lines.append(f"{name} = @{target}" if kind == "anchor" else f"{name} = from {nxt}")
            self.files[path] = "\n".join(lines) + "\n"
            name = target if kind == "anchor" else name
            path = nxt
            hops.append((kind, target))
            filler = f"{self.rng.choice(_KEYS)}_backup = {self.rng.randint(2, 900)}"
            lines = [f"# profile {self.rng.choice(_WORDS)}", filler]
        value = self.rng.randint(10, 9999)
        self.files[path] = "\n".join(lines + [f"{name} = {value}"]) + "\n"
        return hops, path, value

    def tool_ls(self, path: str = "/") -> list[str]:
        """List a directory (sub-directories end with '/').

        Args:
            path: Absolute directory path, e.g. /etc or /srv/billing.
        """
        path = _clean(path)
        if path in self.files:
            return [path]
        prefix = "" if path == "/" else path
        entries = sorted(
            {
                p[len(prefix) + 1 :].split("/")[0] + ("/" if "/" in p[len(prefix) + 1 :] else "")
                for p in self.files
                if p.startswith(prefix + "/")
            }
        )
        if not entries:
            raise ToolError(f"no directory {path[:80]!r}; try ls('/') to see the top level")
        return entries

    def tool_cat(self, path: str) -> str:
        """Show the text of a file.

        Args:
            path: Absolute file path, e.g. /etc/shared/limits.conf.
        """
        path = _clean(path)
        if path not in self.files:
            raise ToolError(f"no file {path[:80]!r}; use ls to browse or grep to search")
        return self.files[path]

    def tool_grep(self, pattern: str) -> list[str]:
        """Find lines containing a plain substring (case-sensitive) in every file.

        Args:
            pattern: Text to look for, 2 to 80 characters (no regular expressions).
        """
        if not 2 <= len(pattern) <= 80:
            raise ToolError("the pattern must be 2 to 80 characters long")
        hits = [
            f"{path}: {line}"
            for path in sorted(self.files)
            for line in self.files[path].splitlines()
            if pattern in line
        ]
        return hits[:25] or [f"no line contains {pattern!r}"]

    def _answer(self, answer: str):
        if parse_number(answer) == self.value:  # exact: no float overflow on 1e309
            return f"Correct: {self.key} is {self.value}.", 1.0, True
        return "Wrong value.", 0.0, True

    # hole: rule: the privileged hint (never the value)
    def hint(self) -> str:
        kinds = ", then ".join(
            "a grep for an @name" if k == "anchor" else "a file to open" for k, _ in self.chain
        )
        return f"From {self.start} the chain is {kinds}; it ends in the file {self.final_path}."

    def solution(self) -> list[str]:
        actions = [_call("cat", path=self.start)]
        for kind, target in self.chain:
            actions.append(
                _call("grep", pattern=f"{target} =")
                if kind == "anchor"
                else _call("cat", path=target)
            )
        return actions + [f"<answer>{self.value}</answer>"]
