import torch


class BaseMetricLossFunction(torch.nn.Module):
    def __init__(self, normalize_embeddings=True, **kwargs):
        super().__init__()
        self.normalize_embeddings = normalize_embeddings

    def compute_loss(self, embeddings, labels, indices_tuple=None):
        """
        This has to be implemented and is what actually computes the loss.
        """
        raise NotImplementedError

    def forward(self, embeddings, labels, indices_tuple=None):
        labels = labels.to(embeddings.device)
        if self.normalize_embeddings:
            embeddings = torch.nn.functional.normalize(embeddings, p=2, dim=1)
        self.embedding_norms = torch.norm(embeddings, p=2, dim=1)
        loss_dict = self.compute_loss(embeddings, labels, indices_tuple)
        return sum(torch.mean(v["losses"]) for v in loss_dict.values())
