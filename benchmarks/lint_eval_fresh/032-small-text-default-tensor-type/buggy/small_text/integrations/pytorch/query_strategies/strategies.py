import numpy as np
import torch

from small_text.integrations.pytorch.utils.misc import assert_layer_exists, default_tensor_type
from small_text.integrations.pytorch.utils.data import dataloader
from small_text.query_strategies import QueryStrategy


class ExpectedGradientLength(QueryStrategy):
    """Selects instances by expected gradient length [Set07]_."""
    def __init__(self, num_classes, batch_size=50, device='cuda'):
        self.batch_size = batch_size
        self.num_classes = num_classes
        self.device = device
        self.scores_ = None

    def query(self, clf, dataset, indices_unlabeled, indices_labeled, y, n=10):
        criterion = torch.nn.CrossEntropyLoss(reduction='none').to(self.device)

        collate_fn = clf._create_collate_fn()
        dataset_iter = dataloader(dataset, batch_size=self.batch_size, collate_fn=collate_fn,
                                  train=False)

        clf.model.eval()
        clf.model.to(self.device)

        gradient_lengths = np.zeros(len(dataset), dtype=np.float64)

        offset = 0
        with default_tensor_type(torch.FloatTensor):
            for i, (dataset, *_) in enumerate(dataset_iter):
                self.compute_gradient_lengths(clf, criterion, gradient_lengths, offset, dataset)
                offset += dataset.size(0)

        self.scores_ = gradient_lengths
        indices = np.argpartition(-gradient_lengths[indices_unlabeled], n)[:n]
        return np.array([indices_unlabeled[i] for i in indices])

    def compute_gradient_lengths(self, clf, criterion, gradient_lengths, offset, x):
        batch_len = x.size(0)
        all_classes = torch.LongTensor([batch_len * [i]
                                        for i in range(self.num_classes)])
        if self.device is not None and self.device != 'cpu':
            all_classes = all_classes.to(self.device)

        x = x.to(self.device, non_blocking=True)
        clf.model.zero_grad()
        output = clf.model(x)
        for j in range(self.num_classes):
            loss = criterion(output, all_classes[j])
            gradient_lengths[offset:offset + batch_len] += loss.detach().cpu().numpy()
