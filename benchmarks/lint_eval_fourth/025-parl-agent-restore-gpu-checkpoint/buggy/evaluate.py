import gym

from atari_agent import AtariAgent
from atari_model import AtariModel
from parl.algorithms import DQN


def main():
    env = gym.make("PongNoFrameskip-v4")
    model = AtariModel(act_dim=env.action_space.n)
    algorithm = DQN(model, gamma=0.99, lr=3e-4)
    agent = AtariAgent(algorithm, act_dim=env.action_space.n)
    agent.restore('./model.ckpt')
    obs = env.reset()
    done = False
    while not done:
        action = agent.predict(obs)
        obs, reward, done, _ = env.step(action)


if __name__ == '__main__':
    main()
