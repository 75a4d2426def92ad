import time

import numpy as np
import torch

from torchrl.learners import BaseLearner
from torchrl.multi_envs import MultiEnvs


class MultiEpisodeRunner:
  def __init__(self, make_env_fn, n_runners: int = 1, max_steps: int = 1000, base_seed: int = None):
    self.n_envs = n_runners
    self.max_steps = max_steps
    self.make_env_fn = make_env_fn
    self.multi_envs = MultiEnvs(make_env_fn, n_envs=n_runners, base_seed=base_seed)
    self._obs = [None] * n_runners
    self._rollout_duration = 0.0

  def collect(self, learner: BaseLearner, steps: int = None):
    """This routine collects trajectories from each environment
    until a maximum rollout length of `steps`."""

    steps = steps or self.max_steps
    history_list = [[] for _ in range(self.n_envs)]
    rollout_start = time.time()

    batch_reset_ids = [i for i, obs in enumerate(self._obs) if obs is None]
    if batch_reset_ids:
      new_obs = self.multi_envs.reset(batch_reset_ids)
      for env_id, obs in zip(batch_reset_ids, new_obs):
        self._obs[env_id] = obs

    while steps:
      batch_act_ids = [i for i, obs in enumerate(self._obs) if obs is not None]
      if not batch_act_ids:
        break

      obs_list = [self._obs[i] for i in batch_act_ids]

      with torch.no_grad():
        # TODO: device placement?
        batch_obs_tensor = torch.from_numpy(np.array(obs_list)).float()
        action_list = learner.act(batch_obs_tensor)

      step_list = self.multi_envs.step(batch_act_ids, action_list)

      for env_id, obs, action, (next_obs, reward, done, _) in zip(
        batch_act_ids, obs_list, action_list, step_list):
        history_list[env_id].append((obs, action, next_obs, reward, done))
        self._obs[env_id] = None if done else next_obs

      steps -= 1

    self._rollout_duration = time.time() - rollout_start
    return history_list
