from copy import deepcopy

from torch.optim import Adam

from torchrl.learners import BaseLearner
from torchrl.policies import epsilon_greedy
from torchrl.models import QNet


class BaseDQNLearner(BaseLearner):
  def __init__(self, observation_space, action_space, lr=1e-4, eps_max=1.0):
    super(BaseDQNLearner, self).__init__(observation_space, action_space)

    self.q_net = QNet(observation_space.shape[0], action_space.n)
    self.target_q_net = deepcopy(self.q_net)
    self.q_net_optim = Adam(self.q_net.parameters(), lr=lr)
    self.eps = eps_max

  @property
  def models(self):
    return [self.q_net, self.target_q_net]

  def act(self, obs):
    actions = self.q_net(obs)
    actions = actions.max(dim=1)[1].cpu().numpy()
    actions = epsilon_greedy(self.action_space.n, actions, self.eps)
    return actions
