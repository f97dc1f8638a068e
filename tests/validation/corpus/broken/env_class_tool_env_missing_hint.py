# expect: env_class
"""Library catalogue lookup through tools; the class has no hint()."""

from __future__ import annotations

from spade_envs import ToolEnv, ToolError, answers_match

_TITLES = ["Dune", "Emma", "Ulysses", "Beloved", "Middlemarch", "Persuasion", "Kindred", "Solaris"]
_SHELVES = ["A1", "A2", "B1", "B2", "C1", "C2"]


class LibraryShelf(ToolEnv):
    skill = "logic"
    description = (
        "A library catalogue can be searched with tools. Find the shelf of the book that "
        "was borrowed most often and answer with <answer>shelf</answer>."
    )
    max_turns = 6

    def _reset(self) -> str:
        titles = self.rng.sample(_TITLES, 5)
        loans = self.rng.sample(range(1, 60), 5)
        self.books = {t: {"loans": n, "shelf": self.rng.choice(_SHELVES)} for t, n in zip(titles, loans)}
        self.top = max(self.books, key=lambda t: self.books[t]["loans"])
        return (
            "Which shelf holds the most borrowed book? Use list_books and shelf_of(title), "
            "then answer <answer>shelf</answer>."
        )

    def tool_list_books(self) -> list[dict]:
        """List the titles with their loan counts."""
        return [{"title": t, "loans": b["loans"]} for t, b in sorted(self.books.items())]

    def tool_shelf_of(self, title: str) -> str:
        """The shelf a book stands on.

        Args:
            title: Exact title from list_books.
        """
        if title not in self.books:
            raise ToolError(f"no book {title!r}; use a title from list_books")
        return self.books[title]["shelf"]

    def _answer(self, answer: str):
        if answers_match(answer, self.books[self.top]["shelf"]):
            return "Correct.", 1.0, True
        return "Wrong shelf.", 0.0, True

    def solution(self) -> list[str]:
        return [
            '<tool_call>{"name": "list_books", "arguments": {}}</tool_call>',
            f'<tool_call>{{"name": "shelf_of", "arguments": {{"title": "{self.top}"}}}}</tool_call>',
            f"<answer>{self.books[self.top]['shelf']}</answer>",
        ]
