import torch
import torch.nn.functional as F

from small_text.integrations.pytorch.utils.data import dataloader


class KimCNNClassifier(object):

    def _train_func(self, sub_train_, weights, optimizer, scheduler):
        train_loss = 0.
        data = sub_train_.data
        if weights is not None:
            data = [d + (weights[i],) for i, d in enumerate(data)]

        train_iter = dataloader(data, self.mini_batch_size,
                                self._create_collate_fn(use_sample_weights=weights is not None))

        for i, (text, cls, weight) in enumerate(train_iter):
            optimizer.zero_grad()
            text, cls, weight = text.to(self.device), cls.to(self.device), weight.to(self.device)
            output = self.model(text)
            loss = (self.criterion(output, cls) * weight).mean()
            loss.backward()
            optimizer.step()
            scheduler.step()
            train_loss += loss.item()
        return train_loss / len(sub_train_)
