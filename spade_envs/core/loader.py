"""Turning environment source into an environment class, in this process.

This is the *trusted* path: the code runs in the calling process with its full
rights. It is right for the seed corpus (shipped with the package) and for files a
user names and vouches for. Model-written code goes through ``spade_envs.sandbox``.
"""

from __future__ import annotations

import hashlib
import inspect
import sys
import types
from pathlib import Path

from ..error import EnvLoadError
from .dialect import Dialect, detect_dialect, prepare_namespace
from .text_env import TextEnv
from .text_game import TextGame

__all__ = ["find_env_class", "is_abstract_base", "is_env_class", "load_env_class", "load_env_file"]

_PROTOCOL_BASES = (TextEnv, TextGame)


def is_env_class(obj: object) -> bool:
    """Whether ``obj`` is a concrete protocol class (not one of the base classes)."""
    from .game_env import GameSeatEnv
    from .tool_env import ToolEnv

    return (
        isinstance(obj, type)
        and issubclass(obj, _PROTOCOL_BASES)
        and obj not in (TextEnv, ToolEnv, TextGame, GameSeatEnv)
    )


def is_abstract_base(cls: type) -> bool:
    """Whether ``cls`` is meant only to be extended: an ABC, a ``Base``/``Abstract``/``Mixin``
    name, or a method of its own that raises ``NotImplementedError``."""
    name = cls.__name__
    if (
        inspect.isabstract(cls)
        or name.startswith(("Base", "Abstract"))
        or name.endswith(("Base", "Mixin"))
    ):
        return True
    return any(
        inspect.isfunction(f) and "NotImplementedError" in f.__code__.co_names
        for f in vars(cls).values()
    )


def find_env_class(module: types.ModuleType, dialect: Dialect = Dialect.NATIVE) -> type:
    """The one environment class a module defines (imported ones do not count).

    In the ``spade`` dialect a module without a protocol class gives its *first* class
    named ``*Env`` (as SPADE's loader takes it), adapted by :func:`.duck.duck_env_class`.

    Raises:
        EnvLoadError: The module defines no environment class, or more than one.
    """
    found = [
        obj
        for obj in vars(module).values()
        if is_env_class(obj) and obj.__module__ == module.__name__
    ]
    # An abstract intermediate base that another environment class of the module extends
    # is plumbing, not a second environment; a concrete one that is extended is.
    found = [
        c
        for c in found
        if not (is_abstract_base(c) and any(c is not o and issubclass(o, c) for o in found))
    ]
    where = getattr(module, "__file__", None) or module.__name__
    if not found and dialect is Dialect.SPADE:
        return _first_spade_class(module, where)
    if not found:
        from .duck import duck_env_class, is_duck_env_class

        ducks = [
            obj
            for obj in vars(module).values()
            if is_duck_env_class(obj) and obj.__module__ == module.__name__
        ]
        if len(ducks) == 1:
            return duck_env_class(ducks[0])
        raise EnvLoadError(
            f"{where} defines no environment class: define one subclass of "
            "spade_envs.TextEnv, ToolEnv or TextGame."
        )
    if len(found) > 1:
        names = ", ".join(sorted(c.__name__ for c in found))
        raise EnvLoadError(
            f"{where} defines {len(found)} environment classes ({names}); "
            "put each environment in its own module."
        )
    return found[0]


def _first_spade_class(module: types.ModuleType, where: str) -> type:
    from .dialect import spade_env_classes
    from .duck import duck_env_class, is_duck_env_class

    defined = [
        name
        for name, obj in vars(module).items()
        if isinstance(obj, type) and obj.__module__ == module.__name__
    ]
    names = spade_env_classes(defined)
    if not names:
        raise EnvLoadError(
            f"{where} defines no environment class: no subclass of spade_envs.TextEnv, "
            "ToolEnv or TextGame (our dialect), and no class named *Env with reset() and "
            "step() (SPADE's, whose loader takes the first one)."
        )
    first = getattr(module, names[0])
    if not is_duck_env_class(first):
        missing = [m for m in ("reset", "step") if not callable(getattr(first, m, None))]
        raise EnvLoadError(
            f"{where}: the game class {names[0]} (SPADE's loader takes the first *Env class) "
            f"is missing required method: {', '.join(missing) or 'reset/step'}."
        )
    return duck_env_class(first)


def load_env_class(source: str, *, filename: str = "<env>") -> type:
    """Execute ``source`` as a fresh module (trusted, in-process) and return its env class.

    The module is named after the SHA-256 of the source, so two versions of the same
    class never collide in ``sys.modules`` and ``copy``/``pickle`` can find it again.
    """
    found = _LOADED.get(source)
    if found is not None:
        return found
    digest = hashlib.sha256(source.encode("utf-8")).hexdigest()[:16]
    name = f"spade_envs._loaded.m{digest}"
    module = sys.modules.get(name)
    if module is None:
        module = types.ModuleType(name)
        module.__file__ = filename
        try:
            code = compile(source, filename, "exec")
        except SyntaxError as exc:
            raise EnvLoadError(
                f"{filename} does not parse: {exc.msg} (line {exc.lineno})."
            ) from exc
        sys.modules[name] = module
        prepare_namespace(module.__dict__, source)
        try:
            exec(code, module.__dict__)
        except Exception as exc:
            del sys.modules[name]
            raise EnvLoadError(
                f"{filename} raised {type(exc).__name__} while loading: {exc}"
            ) from exc
    cls = find_env_class(module, detect_dialect(source))
    if len(_LOADED) < 4096:  # a bound, so a designer loop cannot grow it without end
        _LOADED[source] = cls
    return cls


# Source text -> its class: make() of the same code again skips hashing and the scan.
_LOADED: dict[str, type] = {}


def load_env_file(path: str | Path) -> type:
    """Load the environment class defined in the Python file at ``path`` (trusted)."""
    path = Path(path)
    if not path.is_file():
        raise EnvLoadError(
            f"{path} is not a file; pass the path of a .py file with one environment class."
        )
    try:
        source = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise EnvLoadError(f"Cannot read {path}: {exc}") from exc
    return load_env_class(source, filename=str(path))
