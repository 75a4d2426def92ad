import torch
from torch.utils.data import TensorDataset
from tqdm import tqdm

from .utils import generate_episode, generate_support, stratified_train_test_split


class EquineProtonet(torch.nn.Module):
    def __init__(self, model, device="cpu"):
        super().__init__()
        self.model = model
        self.device = device
        self.to(device)

    def train_model(
        self,
        dataset: TensorDataset,
        num_episodes: int,
        calib_frac: float = 0.2,
        support_size: int = 25,
        way: int = 3,
        episode_size: int = 100,
        loss_fn=torch.nn.functional.cross_entropy,
        opt_class=torch.optim.Adam,
    ):
        self.train()
        X, Y = dataset[:]

        train_x, calib_x, train_y, calib_y = stratified_train_test_split(
            X, Y, test_size=calib_frac
        )
        optimizer = opt_class(self.parameters())

        train_x.to(self.device)
        train_y.to(self.device)
        calib_x.to(self.device)
        calib_y.to(self.device)

        for i in tqdm(range(num_episodes)):
            optimizer.zero_grad()
            support, episode_x, episode_y = generate_episode(
                train_x, train_y, support_size, way, episode_size
            )
            self.model.update_support(support)
            _, dists = self.model(episode_x)
            loss_value = loss_fn(
                torch.neg(dists).to(self.device), episode_y.to(self.device)
            )
            loss_value.backward()
            optimizer.step()

        self.eval()
        full_support = generate_support(
            train_x, train_y, support_size, selected_labels=torch.unique(train_y).tolist()
        )
        self.model.update_support(full_support)
        pred_probs, dists = self.model(calib_x)
        return pred_probs, calib_y
