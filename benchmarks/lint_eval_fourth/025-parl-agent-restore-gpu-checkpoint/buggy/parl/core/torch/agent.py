import os

import torch

from parl.core.agent_base import AgentBase


class Agent(AgentBase):
    def __init__(self, algorithm):
        super(Agent, self).__init__(algorithm)
        self.alg = algorithm

    def save(self, save_path, model=None):
        if model is None:
            model = self.alg.model
        sep = os.sep
        dirname = sep.join(save_path.split(sep)[:-1])
        if dirname != '' and not os.path.exists(dirname):
            os.makedirs(dirname)
        torch.save(model.state_dict(), save_path)

    def restore(self, save_path, model=None):
        """Restore previously saved parameters."""
        if model is None:
            model = self.alg.model
        checkpoint = torch.load(save_path)
        model.load_state_dict(checkpoint)
