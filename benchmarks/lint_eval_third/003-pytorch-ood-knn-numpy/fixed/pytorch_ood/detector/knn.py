import logging
from typing import TypeVar, Callable

from torch import Tensor, tensor

from pytorch_ood.api import RequiresFittingException, Detector, ModelNotSetException
from pytorch_ood.utils import is_known

log = logging.getLogger(__name__)
Self = TypeVar("Self")


class KNN(Detector):
    """
    Fits a nearest neighbor model to the IN samples an uses the distance
    from the nearest neighbor as outlier score.
    """
    def __init__(self, model: Callable[[Tensor], Tensor], **knn_kwargs):
        self.model = model
        self._is_fitted = False

        try:
            from sklearn.neighbors import NearestNeighbors
        except ImportError:
            raise Exception(f"You have to install scikit-learn to use this detector")

        self.knn: NearestNeighbors = NearestNeighbors(n_neighbors=1, n_jobs=-1, **knn_kwargs)

    def predict(self, x: Tensor) -> Tensor:
        """
        :param x: inputs, will be passed through model
        """
        if not self.model:
            raise ModelNotSetException()

        z = self.model(x)
        return self.predict_features(z)

    def predict_features(self, z: Tensor) -> Tensor:
        if not self._is_fitted:
            raise RequiresFittingException()

        dist, idx = self.knn.kneighbors(z.detach().cpu().numpy(), n_neighbors=1, return_distance=True)

        return tensor(dist)

    def fit_features(self: Self, z: Tensor, labels: Tensor) -> Self:
        known = is_known(labels)

        if not known.any():
            raise ValueError(f"No IN samples")

        self.knn.fit(z[known].cpu().numpy())
        self._is_fitted = True
        return self
