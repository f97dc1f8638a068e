"""SPADE self-play generated game"""


class ArchiveReportEnv(ToolUseBaseEnv):
    """Move a report into a new archive folder of a small simulated file system."""

    def reset(self, seed=None):
        rng = random.Random(seed)
        self.turn_count = 0
        self._call_history = []
        folders = ["docs", "notes", "drafts", "papers"]
        self._folder = rng.choice(folders)
        self._file = rng.choice(["report", "summary", "memo"]) + f"_{rng.randint(10, 99)}.txt"
        self._archive = rng.choice(["archive", "old", "keep"])
        self._state = {"cwd": "/home", "dirs": {f"/home/{f}": [] for f in folders}}
        self._state["dirs"][f"/home/{self._folder}"].append(self._file)
        self._expected_answer = f"{self._archive}/{self._file}"
        self._tools = {
            "cd": {"description": "Change directory.",
                   "parameters": {"type": "object", "properties": {"path": {"type": "string"}},
                                  "required": ["path"]}},
            "ls": {"description": "List a directory.",
                   "parameters": {"type": "object", "properties": {"path": {"type": "string"}}}},
            "mkdir": {"description": "Make a directory here.",
                      "parameters": {"type": "object", "properties": {"name": {"type": "string"}},
                                     "required": ["name"]}},
            "mv": {"description": "Move a file into a directory here.",
                   "parameters": {"type": "object",
                                  "properties": {"src": {"type": "string"}, "dst": {"type": "string"}},
                                  "required": ["src", "dst"]}},
        }
        observation = (
            f"The file {self._file} is somewhere under /home. Create the folder "
            f"'{self._archive}' next to it, move the file into it, and answer with the "
            "file's new path relative to its old folder, like <answer>folder/file</answer>. "
            "Call tools with <tool_call>{\"name\": ..., \"arguments\": {...}}</tool_call>."
        )
        return observation, {}

    def tool_cd(self, path):
        target = path if path.startswith("/") else f"/home/{path}"
        if target not in self._state["dirs"] and target != "/home":
            return f"No such directory: {path}"
        self._state["cwd"] = target
        return f"Changed to {target}"

    def tool_ls(self, path="."):
        where = self._state["cwd"] if path in (".", "") else path
        if where == "/home":
            return " ".join(sorted(d.split("/")[-1] for d in self._state["dirs"] if d.count("/") == 2))
        return " ".join(self._state["dirs"].get(where, [])) or "(empty)"

    def tool_mkdir(self, name):
        new = f"{self._state['cwd']}/{name}"
        self._state["dirs"].setdefault(new, [])
        return f"Created {new}"

    def tool_mv(self, src, dst):
        here = self._state["cwd"]
        files = self._state["dirs"].get(here, [])
        if src not in files or f"{here}/{dst}" not in self._state["dirs"]:
            return "Cannot move"
        files.remove(src)
        self._state["dirs"][f"{here}/{dst}"].append(src)
        return "Moved"

    def _check_answer(self, answer):
        moved = self._file in self._state["dirs"].get(f"/home/{self._folder}/{self._archive}", [])
        return moved and answer.strip() == self._expected_answer

    def solution(self):
        return (f'1. cd(path="{self._folder}") -> Changed '
                f'2. mkdir(name="{self._archive}") -> Created '
                f'3. mv(src="{self._file}", dst="{self._archive}") -> Moved '
                f'ANSWER: {self._expected_answer}')
