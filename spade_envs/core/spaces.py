"""A text space that accepts any Unicode string.

Gymnasium's :class:`~gymnasium.spaces.Text` only accepts characters from a fixed
charset (letters and digits by default), so an observation with a space or a
comma is "outside the observation space". Language-model environments need every
character, so :class:`UnicodeText` keeps ``Text`` as its base (vector-env helpers
such as ``batch_space`` then work unchanged) but accepts any ``str`` whose length
is within bounds, and samples strings that include whitespace, punctuation,
non-Latin scripts, emoji and control characters.
"""

from __future__ import annotations

import string
from collections.abc import Sequence
from typing import Any

import numpy as np
from gymnasium.spaces import Space, Text

__all__ = ["UnicodeText", "TextObservation", "DEFAULT_OBSERVATION_LENGTH", "DEFAULT_ACTION_LENGTH"]

#: Longest observation a protocol environment may return (characters).
DEFAULT_OBSERVATION_LENGTH = 16_384
#: Length bound of the action space. ``step`` accepts longer strings (models ramble);
#: the bound only limits what ``sample()`` produces and what ``contains`` vouches for.
DEFAULT_ACTION_LENGTH = 8_192

# Pools that samples draw from: the ones that break naive parsers are over-represented.
_POOLS: tuple[str, ...] = (
    string.ascii_letters + string.digits,
    string.punctuation + " " * 8,
    "\t\n\r\x00\x07\x1b\x7f\u200b\u2028\ufeff",
    "àéîõüßçñÆØÅ" + "αβγδεζηθλμπσω" + "абвгдежзий",
    "漢字仮名交じり文한국어العربية",
    "😀🎉🚀🧠✓✗∑∞≠≤≥",
    "{}[]<>\\/\"'`|",
)
# Every char above is "in" the charset so ``Text``'s own helpers never trip on a sample.
_CHARSET = frozenset("".join(_POOLS))


class UnicodeText(Text):
    """Any Unicode string of ``min_length`` to ``max_length`` characters.

    Args:
        max_length: Longest string the space contains.
        min_length: Shortest string the space contains (default 0: empty strings are valid).
        sample_max_length: Longest string :meth:`sample` draws (keeps samples cheap).
        seed: Seed of the space's own random generator (for :meth:`sample`).
    """

    def __init__(
        self,
        max_length: int = DEFAULT_OBSERVATION_LENGTH,
        *,
        min_length: int = 0,
        sample_max_length: int = 64,
        seed: int | np.random.Generator | None = None,
    ):
        if type(self)._charset_template is None:
            # Text builds per-instance charset tables (a few hundred characters) in its
            # constructor; every env builds two spaces, so build them once and share them
            # (they are never mutated). This keeps gym.make as cheap as CartPole's.
            type(self)._charset_template = Text(1, charset=_CHARSET)
        if not isinstance(min_length, int | np.integer) or not isinstance(
            max_length, int | np.integer
        ):
            raise TypeError(
                f"min_length and max_length must be integers: {min_length}, {max_length}"
            )
        if not 0 <= min_length <= max_length:
            raise ValueError(
                f"Need 0 <= min_length <= max_length, got min_length={min_length}, "
                f"max_length={max_length}."
            )
        template = type(self)._charset_template
        self.min_length, self.max_length = int(min_length), int(max_length)
        self._char_set = template._char_set
        self._char_list = template._char_list
        self._char_index = template._char_index
        self._char_str = template._char_str
        Space.__init__(self, dtype=str, seed=seed)
        self.sample_max_length = max(min_length, min(sample_max_length, max_length))

    _charset_template: Text | None = None

    def contains(self, x: Any) -> bool:
        """Whether ``x`` is a ``str`` of allowed length (any characters)."""
        return isinstance(x, str) and self.min_length <= len(x) <= self.max_length

    def sample(self, mask: Any = None, probability: Any = None) -> str:
        """Draw a short random string mixing ASCII, whitespace, control chars and other scripts."""
        rng = self.np_random
        length = int(rng.integers(self.min_length, self.sample_max_length + 1))
        pools = rng.integers(0, len(_POOLS), size=length)
        return "".join(_POOLS[p][int(rng.integers(0, len(_POOLS[p])))] for p in pools)

    @property
    def is_np_flattenable(self) -> bool:
        return False

    def __repr__(self) -> str:
        return f"UnicodeText({self.min_length}, {self.max_length})"

    def __eq__(self, other: Any) -> bool:
        return (
            isinstance(other, UnicodeText)
            and self.min_length == other.min_length
            and self.max_length == other.max_length
        )

    def __hash__(self) -> int:
        return hash((UnicodeText, self.min_length, self.max_length))


class TextObservation(str):
    """A ``str`` that also carries the ``dtype`` of :class:`UnicodeText`.

    PettingZoo's ``api_test`` compares ``observation.dtype`` with the space's dtype,
    which a plain ``str`` does not have. Games return this subclass; it is a ``str``
    in every other respect (hashing, equality, JSON, pickling).
    """

    __slots__ = ()
    dtype = np.dtype(str)


# ----- shared memory for AsyncVectorEnv -------------------------------------------------------
# Gymnasium stores Text observations in shared memory as indices into the space's charset,
# which would turn any other character into nothing. UnicodeText stores the length and the
# code points instead (int32 each, max_length + 1 slots per environment).
class _SharedTexts(Sequence):
    """A live view of strings in shared memory, like the numpy views Gymnasium expects.

    ``AsyncVectorEnv`` reads its shared buffer once and deep-copies that object at every
    step; a tuple of ``str`` would freeze the first observations forever, so this view
    decodes the buffer when read and becomes a plain tuple when copied.
    """

    def __init__(self, rows: np.ndarray):
        self._rows = rows

    def __len__(self) -> int:
        return len(self._rows)

    def __getitem__(self, index: Any) -> Any:
        if isinstance(index, slice):
            return tuple(self)[index]
        row = self._rows[index]
        return row[1 : 1 + int(row[0])].astype("<u4").tobytes().decode("utf-32-le", "surrogatepass")

    def __deepcopy__(self, memo: dict) -> tuple[str, ...]:
        return tuple(self)

    def __copy__(self) -> tuple[str, ...]:
        return tuple(self)

    def __repr__(self) -> str:
        return repr(tuple(self))


def _register_shared_memory() -> None:
    from gymnasium.vector.utils import shared_memory as sm

    @sm.create_shared_memory.register(UnicodeText)
    def _create(space: UnicodeText, n: int = 1, ctx: Any = None) -> Any:
        import multiprocessing

        ctx = ctx or multiprocessing
        return ctx.Array(np.dtype(np.int32).char, n * (space.max_length + 1))

    @sm.read_from_shared_memory.register(UnicodeText)
    def _read(space: UnicodeText, shared_memory: Any, n: int = 1) -> _SharedTexts:
        rows = np.frombuffer(shared_memory.get_obj(), dtype=np.int32).reshape(
            (n, space.max_length + 1)
        )
        return _SharedTexts(rows)

    @sm.write_to_shared_memory.register(UnicodeText)
    def _write(space: UnicodeText, index: int, value: str, shared_memory: Any) -> None:
        size = space.max_length + 1
        codes = np.frombuffer(value.encode("utf-32-le", "surrogatepass"), dtype="<u4")
        codes = codes[: space.max_length]
        destination = np.frombuffer(shared_memory.get_obj(), dtype=np.int32)
        destination[index * size] = len(codes)
        destination[index * size + 1 : index * size + 1 + len(codes)] = codes.astype(np.int32)


_register_shared_memory()
