"""Registry environments in the trainers people use, one module per framework.

- :mod:`spade_envs.integrations.trl`: TRL's ``GRPOTrainer`` (its
  ``environment_factory``): :func:`~spade_envs.integrations.trl.environment_factory`,
  :func:`~spade_envs.integrations.trl.registry_dataset`.
- OpenEnv: ``spade-envs serve`` speaks OpenEnv's protocol at
  ``/api/v1/openenv/<Name>-v<N>`` (:mod:`spade_envs.web.openenv`); OpenEnv's own client
  plays it.

Each framework is an extra (``pip install -e '.[trl]'``, ``'.[openenv]'``) imported only
by the module that needs it, so ``import spade_envs.integrations`` costs nothing. Every
integration plays through the same door as ``gym.make`` (sandboxed, trust decided there)
and takes pinned IDs (:mod:`spade_envs.registry.pins`).
"""

from __future__ import annotations
