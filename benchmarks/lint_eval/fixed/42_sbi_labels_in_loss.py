# Reduced from https://github.com/sbi-dev/sbi/issues/441
# Scenario 1; the default rule that should find it: DK003 (fixed twin: no finding expected)
import torch


class SNRE_A:
    def _loss(self, theta, x, num_atoms):
        batch_size = theta.shape[0]
        logits = self._classifier_logits(theta, x, num_atoms)
        likelihood = torch.sigmoid(logits).squeeze()
        labels = torch.ones(2 * batch_size)
        labels[1::2] = 0.0
        labels = labels.to(self._device)
        return torch.nn.BCELoss()(likelihood, labels)
