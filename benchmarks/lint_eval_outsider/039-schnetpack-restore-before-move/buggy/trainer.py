import os
import sys

import torch


class Trainer:
    r"""Class to train a model: an internal training loop with validation, checkpoints and hooks."""

    def __init__(self, model_path, model, loss_fn, optimizer, train_loader, validation_loader, hooks=[]):
        self.model_path = model_path
        self.checkpoint_path = os.path.join(self.model_path, "checkpoints")
        self.train_loader = train_loader
        self.validation_loader = validation_loader
        self.hooks = hooks
        self._model = model
        self._stop = False
        self.loss_fn = loss_fn
        self.optimizer = optimizer

        if os.path.exists(self.checkpoint_path):
            self.restore_checkpoint()
        else:
            os.makedirs(self.checkpoint_path)
            self.epoch = 0
            self.step = 0
            self.best_loss = float("inf")
            self.store_checkpoint()

    @property
    def state_dict(self):
        return {
            "epoch": self.epoch,
            "step": self.step,
            "best_loss": self.best_loss,
            "optimizer": self.optimizer.state_dict(),
            "model": self._model.state_dict(),
        }

    @state_dict.setter
    def state_dict(self, state_dict):
        self.epoch = state_dict["epoch"]
        self.step = state_dict["step"]
        self.best_loss = state_dict["best_loss"]
        self.optimizer.load_state_dict(state_dict["optimizer"])
        self._model.load_state_dict(state_dict["model"])

    def store_checkpoint(self):
        chkpt = os.path.join(self.checkpoint_path, "checkpoint-" + str(self.epoch) + ".pth.tar")
        torch.save(self.state_dict, chkpt)

    def restore_checkpoint(self, epoch=None):
        if epoch is None:
            epoch = max(
                int(f.split(".")[0].split("-")[-1])
                for f in os.listdir(self.checkpoint_path)
                if f.startswith("checkpoint")
            )
        chkpt = os.path.join(self.checkpoint_path, "checkpoint-" + str(epoch) + ".pth.tar")
        self.state_dict = torch.load(chkpt)

    def train(self, device, n_epochs=sys.maxsize):
        """Train the model for the given number of epochs on a specified device."""
        self._model.to(device)
        self._stop = False
        for _ in range(n_epochs):
            self.epoch += 1
            for train_batch in self.train_loader:
                self.optimizer.zero_grad()
                # move input to gpu, if needed
                train_batch = {k: v.to(device) for k, v in train_batch.items()}
                result = self._model(train_batch)
                loss = self.loss_fn(train_batch, result)
                loss.backward()
                self.optimizer.step()
                self.step += 1
            self.store_checkpoint()
