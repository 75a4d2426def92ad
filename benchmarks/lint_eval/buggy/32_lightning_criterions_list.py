# Reduced from https://github.com/Lightning-AI/pytorch-lightning/issues/2984
# Scenario 7; the default rule that should find it: DK005 (buggy twin)
import torch
import pytorch_lightning as pl


class Transformer(pl.LightningModule):
    def __init__(self, letter_weights_per_position):
        super().__init__()
        self.criterions = []
        for weight in letter_weights_per_position:
            weight = torch.ones((94))
            self.criterions.append(torch.nn.CrossEntropyLoss(weight=weight))
