# Reduced from https://github.com/Lightning-AI/pytorch-lightning/issues/3674
# Scenario 4; the default rule that should find it: DK004 (buggy twin)
import torch
import pytorch_lightning as pl


class LitModel(pl.LightningModule):
    def __init__(self) -> None:
        super().__init__()
        self.seg = 20
        self.num_joints = 25
        self.tem = self.one_hot(self.seg, self.num_joints)
        self.layer_1 = torch.nn.Linear(28 * 28, 128)

    def one_hot(self, spa, tem) -> torch.Tensor:
        y = torch.arange(spa).unsqueeze(-1)
        y_onehot = torch.FloatTensor(spa, spa)
        y_onehot.zero_()
        y_onehot.scatter_(1, y, 1)
        y_onehot = y_onehot.unsqueeze(0)
        return y_onehot.repeat(tem, 1, 1)

    def forward(self, x):
        return self.layer_1(x.view(x.size(0), -1)) + self.tem.sum()
