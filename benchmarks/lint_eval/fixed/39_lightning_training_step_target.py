# Reduced from https://github.com/Lightning-AI/pytorch-lightning/issues/2400
# Scenario 3; the default rule that should find it: DK003 (fixed twin: no finding expected)
import torch
import pytorch_lightning as pl


class NPairs(pl.LightningModule):
    def training_step(self, batch, batch_idx):
        x1, x2 = batch["x1"], batch["x2"]
        predict = self(x1, x2)
        target = torch.arange(x1.size()[0], device=self.device)
        loss = self.loss_fn(predict, target)
        return {"loss": loss}
