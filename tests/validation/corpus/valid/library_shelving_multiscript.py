# expect: valid
"""Reshelve library books into call-number order with swaps, then say "done".

Titles come in many scripts (Japanese, Arabic, Hebrew, Cyrillic, Greek, Devanagari,
Korean), so observations mix left-to-right and right-to-left text (with U+200E marks).
The final action is the bare command "done"; the hint avoids that word, because the
hint-leak rule compares the final action's text with the hint.
"""

from __future__ import annotations

from spade_envs import TextEnv

BOOKS = [
    ("吾輩は猫である", "Natsume"), ("الخيميائي", "Coelho"), ("מיכאל שלי", "Oz"),
    ("Мастер и Маргарита", "Bulgakov"), ("Οδύσσεια", "Homer"), ("गोदान", "Premchand"),
    ("채식주의자", "Han"), ("Cien años de soledad", "Garcia"), ("Die Verwandlung", "Kafka"),
    ("Война и мир", "Tolstoy"), ("ألف ليلة وليلة", "Anon"), ("雪国", "Kawabata"),
]
CLASSES = ["813.54", "823.912", "833.91", "891.73", "892.436", "895.635", "869.3", "882.01"]


class LibraryShelvingMultiscript(TextEnv):
    skill = "logic"
    description = (
        "Books on a shelf carry call numbers (a Dewey class number, then the author's "
        "name). Put the shelf in call-number order, class number first (as a decimal), "
        "then author alphabetically, by swapping two positions per turn ('swap 2 5'). "
        "Say 'done' when finished; the shelf is checked then."
    )
    max_turns = 20

    def _reset(self) -> str:
        count = self.rng.randint(5, 8)
        picks = self.rng.sample(BOOKS, count)
        self.shelf = []
        for title, author in picks:
            number = self.rng.choice(CLASSES) if self.rng.random() < 0.7 else f"{self.rng.randint(100, 999)}.{self.rng.randint(1, 99)}"
            self.shelf.append((number, author, title))
        while self.shelf == self._sorted():
            self.rng.shuffle(self.shelf)
        self.swaps = 0
        return (
            "Shelf, left to right:\n" + self._show() + "\nOrder by class number (compare as "
            "decimals: 813.54 < 823.9 < 823.912), then by author. Commands: 'swap I J' "
            "(positions) and 'done'."
        )

    @staticmethod
    def _key(book: tuple[str, str, str]) -> tuple[tuple[int, str], str]:
        whole, _, frac = book[0].partition(".")
        return (int(whole), frac), book[1]

    def _sorted(self) -> list[tuple[str, str, str]]:
        return sorted(self.shelf, key=self._key)

    def _show(self) -> str:
        return "\n".join(
            f"  {i}. [{number} {author[:3].upper()}] \u200e{title}\u200e ({author})"
            for i, (number, author, title) in enumerate(self.shelf, 1)
        )

    def _step(self, action: str):
        words = action[:80].lower().replace(",", " ").split()
        if words == ["done"]:
            if self.shelf == self._sorted():
                return f"The shelf is in order ({self.swaps} swaps). Thank you!", 1.0, True
            return "The shelf is not in call-number order. Shelving failed.", 0.0, True
        if len(words) == 3 and words[0] == "swap" and all(w.isascii() and w.isdigit() for w in words[1:]):
            i, j = int(words[1]) - 1, int(words[2]) - 1
            if 0 <= i < len(self.shelf) and 0 <= j < len(self.shelf) and i != j:
                self.shelf[i], self.shelf[j] = self.shelf[j], self.shelf[i]
                self.swaps += 1
                return "Swapped.\n" + self._show(), 0.0, False
            return f"Positions must be two different numbers from 1 to {len(self.shelf)}.", 0.0, False
        return "Write 'swap I J' or 'done'.", 0.0, False

    def hint(self) -> str:
        first = self._sorted()[0]
        return (
            f"The book that belongs in position 1 is {first[2]} ({first[1]}). Compare "
            "fractional parts digit by digit, like decimals; the author only breaks ties."
        )

    def solution(self) -> list[str]:
        shelf, target, moves = list(self.shelf), self._sorted(), []
        for i in range(len(shelf)):
            if shelf[i] != target[i]:
                j = shelf.index(target[i], i + 1)
                shelf[i], shelf[j] = shelf[j], shelf[i]
                moves.append(f"swap {i + 1} {j + 1}")
        return moves + ["done"]
