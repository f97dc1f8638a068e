"""``python -m spade_envs.trainer``: ``spade-envs train`` on its own (what torchrun starts).

torchrun --nproc_per_node=2 -m spade_envs.trainer --preset cpu-test --run-dir runs/ddp
"""

from __future__ import annotations

from ..cli.trainer import main

if __name__ == "__main__":
    main()
