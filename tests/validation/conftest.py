from __future__ import annotations

import pytest

from spade_envs.validation import Validator


@pytest.fixture(scope="session")
def validator():
    with Validator("default", pool_size=2) as v:
        yield v
