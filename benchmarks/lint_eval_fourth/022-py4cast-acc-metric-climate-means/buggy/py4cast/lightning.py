import pytorch_lightning as pl

from py4cast.metrics import MetricACC


class AutoRegressiveLightning(pl.LightningModule):
    def __init__(self, hparams, model):
        super().__init__()
        self.save_hyperparameters()
        self.model = model

    def on_test_start(self):
        self.acc_metric = MetricACC(self.hparams["hparams"].dataset_info)

    def test_step(self, batch, batch_idx):
        prediction, target = self.common_step(batch)
        self.acc_metric.update(prediction, target)

    def on_test_epoch_end(self):
        self.acc_metric.compute()
