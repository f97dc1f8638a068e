# expect: determinism
"""Find the card the dealer drew from a small deck, with higher/lower feedback."""

from __future__ import annotations

from spade_envs import TextEnv, boxed, extract_answer, normalize_text

_SUITS = ["clubs", "diamonds", "hearts", "spades"]


class Card:
    def __init__(self, rank: int, suit: str):
        self.rank = rank
        self.suit = suit

    def name(self) -> str:
        return f"{self.rank} of {self.suit}"


class DealerDraw(TextEnv):
    skill = "logic"
    description = (
        "A deck holds the ranks 1-8 in four suits. The dealer drew one card. Name a card "
        "each turn as \\boxed{5 of hearts}; the reply says whether the drawn card ranks "
        "higher or lower, or whether only the suit is wrong."
    )
    max_turns = 10

    def _reset(self) -> str:
        cards = [Card(rank, suit) for rank in range(1, 9) for suit in _SUITS]
        self.rng.shuffle(cards)
        self.deck = set(cards)
        self.drawn = self.deck.pop()  # the dealer draws a card from the shuffled deck
        return (
            "The dealer drew one card from a deck of ranks 1-8 in clubs, diamonds, hearts "
            "and spades. Name a card each turn as \\boxed{RANK of SUIT}."
        )

    def _parse(self, action: str) -> tuple[int, str] | None:
        words = normalize_text(extract_answer(action)).split()
        if len(words) != 3 or words[1] != "of" or words[2] not in _SUITS:
            return None
        if not (words[0].isascii() and words[0].isdigit()) or not 1 <= int(words[0]) <= 8:
            return None
        return int(words[0]), words[2]

    def _step(self, action: str):
        guess = self._parse(action)
        left = self.max_turns - self.turn
        if guess is None:
            return f"Name a card as \\boxed{{RANK of SUIT}}. Turns left: {left}.", 0.0, False
        rank, suit = guess
        if (rank, suit) == (self.drawn.rank, self.drawn.suit):
            return f"Yes, the dealer drew the {self.drawn.name()}.", 1.0, True
        if rank == self.drawn.rank:
            reply = "Right rank, wrong suit."
        else:
            reply = "Higher." if rank < self.drawn.rank else "Lower."
        if left == 0:
            return f"{reply} Out of turns: it was the {self.drawn.name()}.", 0.0, False
        return f"{reply} Turns left: {left}.", 0.0, False

    def hint(self) -> str:
        colour = "red" if self.drawn.suit in ("diamonds", "hearts") else "black"
        return f"The drawn card is {colour} and its rank is {'even' if self.drawn.rank % 2 == 0 else 'odd'}."

    def solution(self) -> list[str]:
        return [boxed(self.drawn.name())]
