import torch

from torchrl.episode_runner import MultiEpisodeRunner


class Problem:
  def __init__(self, hparams, args):
    self.hparams = hparams
    self.args = args
    self.runner = self.make_runner(n_runners=hparams.num_processes)
    self.agent = self.init_agent()
    self.set_agent_to_device(args.device)

  def init_agent(self):
    raise NotImplementedError

  def make_env(self):
    raise NotImplementedError

  def make_runner(self, n_runners=1, base_seed=None) -> MultiEpisodeRunner:
    return MultiEpisodeRunner(self.make_env, n_runners=n_runners, base_seed=base_seed)

  def set_agent_to_device(self, device: torch.device):
    """
    This routine sends the agent models to desired device
    """
    for model in self.agent.models:
      model.to(device)

  def train(self, history_list: list) -> dict:
    raise NotImplementedError

  def run(self):
    for epoch in range(1, self.args.num_total_steps + 1):
      history_list = self.runner.collect(self.agent, self.args.device,
                                         steps=self.hparams.rollout_steps)
      self.train(history_list)
