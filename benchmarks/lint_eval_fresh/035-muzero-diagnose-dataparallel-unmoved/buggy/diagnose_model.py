import torch

import models
from self_play import MCTS


class DiagnoseModel:
    """
    Tools to understand the learned model.
    """

    def __init__(self, checkpoint, config):
        self.config = config

        # Initialize the network
        self.model = models.MuZeroNetwork(self.config)
        self.model.set_weights(checkpoint["weights"])
        self.model.eval()

    def get_virtual_trajectory_from_obs(self, observation, horizon, to_play=0):
        """
        MuZero plays a game but uses its model instead of using the environment.
        """
        return MCTS(self.config).run(
            self.model, observation, self.config.action_space, to_play, True
        )
