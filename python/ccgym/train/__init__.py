"""What every learner of ``ccgym.agents`` shares: the training framework.

Read it in this order:

* :mod:`ccgym.train.config`: TOML configs merged over a trainer's defaults (or, on resume, over
  the checkpoint's config);
* :mod:`ccgym.train.trajectories` (numpy): per-agent segments built from the bridge's batches,
  GAE, reward-to-go, ADPG's average reward-to-go, the segment update schedule;
* :mod:`ccgym.train.rollout` (numpy): the training scenarios and the one rollout path, a
  :class:`~ccgym.env.AgentPool` stepped batch by batch;
* :mod:`ccgym.train.networks` (torch): MLP builders, the actor and critic of the
  stochastic-policy learners, export to the native policy format of :mod:`ccgym.policies`;
* :mod:`ccgym.train.loop` (torch): the :class:`~ccgym.train.loop.Learner` interface and the
  training loop with TensorBoard logs, checkpoints and resume;
* :mod:`ccgym.train.gym_driver`: the same learners on a plain Gymnasium environment (tests).

A learner file (``ccgym/agents/<name>.py``) holds only its algorithm: its config defaults, its
networks, its loss and update, and ``train_from_config`` / ``export_checkpoint`` calling
:func:`ccgym.train.loop.train` and :func:`ccgym.train.loop.export_checkpoint`.

Importing this package imports nothing heavy; the torch modules import torch.
"""
