import torch


class MCTS:
    def __init__(self, config):
        self.config = config

    def run(self, model, observation, legal_actions, to_play, add_exploration_noise):
        """
        At the root of the search tree we use the representation function to obtain a
        hidden state given the current observation.
        """
        observation = (
            torch.tensor(observation)
            .float()
            .unsqueeze(0)
            .to(next(model.parameters()).device)
        )
        root_predicted_value, policy_logits, hidden_state = model.initial_inference(observation)
        return root_predicted_value, policy_logits, hidden_state
