"""Wrapper class to train contrastive encoder in Self-Supervised setting."""

import torch as th

from utils.model_utils import CPC


def cpc_loss(encoder_samples, predictions):
    total = th.mm(encoder_samples[0], predictions[0].transpose(0, 1))
    return -th.diag(th.log_softmax(total, dim=1)).mean()


class Model:
    """Model: Wrapper class for Contrastive Predictive Coding."""

    def __init__(self, options):
        self.options = options
        # Define which device to use: GPU, or CPU
        self.device = options["device"]
        self.set_cpc()

    def set_cpc(self):
        """Initialize the model, sets up the loss, optimizer, device assignment (GPU, or CPU) etc."""
        self.cpc = CPC(self.options)
        # Assign the model to a device
        self.cpc.to(self.device)
        self.cpc_loss = cpc_loss
        self.optimizer_cpc = th.optim.Adam(self.cpc.parameters(), lr=self.options["learning_rate"])

    def fit(self, data_loader):
        train_loader = data_loader.train_loader
        bs = self.options["batch_size"]
        for epoch in range(self.options["epochs"]):
            for i, Xbatch in enumerate(train_loader):
                Xbatch = self.process_batch(Xbatch)
                # Initialize hidden units for GRU i.e. all zeros with shape (S, batch size, hidden unit size)
                hidden = th.zeros((2, bs, self.options["conv_dims"][-1]), device=self.device)
                encoder_samples, predictions, hidden = self.cpc(Xbatch, hidden)
                loss = self.cpc_loss(encoder_samples, predictions)
                self.optimizer_cpc.zero_grad()
                loss.backward()
                self.optimizer_cpc.step()

    def process_batch(self, Xbatch):
        """Add channel dim to Xbatch, and move it to the device."""
        return Xbatch.unsqueeze(1).float().to(self.device)
