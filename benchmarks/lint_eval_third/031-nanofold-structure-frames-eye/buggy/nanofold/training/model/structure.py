import torch
from torch import nn

from nanofold.training.frame import Frame
from nanofold.training.loss import compute_fape_loss
from nanofold.training.model.structure_layer import StructureModuleLayer


class StructureModule(nn.Module):
    def __init__(self, num_layers, single_embedding_size, pair_embedding_size, *args, **kwargs):
        super().__init__()
        self.layers = nn.ModuleList(
            [
                StructureModuleLayer(
                    single_embedding_size=single_embedding_size,
                    pair_embedding_size=pair_embedding_size,
                    *args,
                    **kwargs,
                )
                for _ in range(num_layers)
            ]
        )
        self.single_layer_norm = nn.LayerNorm(single_embedding_size)
        self.pair_layer_norm = nn.LayerNorm(pair_embedding_size)
        self.single_linear = nn.Linear(single_embedding_size, single_embedding_size)

    @staticmethod
    def get_args(config):
        return {
            **StructureModuleLayer.get_args(config),
            "num_layers": config.getint("StructureModule", "num_layers"),
            "single_embedding_size": config.getint("General", "single_embedding_size"),
            "pair_embedding_size": config.getint("InputEmbedding", "pair_embedding_size"),
        }

    @classmethod
    def from_config(cls, config):
        return cls(**cls.get_args(config))

    def forward(self, single, pair, local_coords, frames_truth=None):
        batch_dims = single.shape[:-1]
        single = self.single_layer_norm(single)
        pair = self.pair_layer_norm(pair)
        single = self.single_linear(single)
        frames = Frame(
            rotations=torch.eye(3).unsqueeze(0).repeat(*batch_dims, 1, 1),
            translations=torch.zeros(*batch_dims, 3),
        )

        aux_losses = []
        for i, layer in enumerate(self.layers):
            single, frames, loss = layer(single, pair, frames, frames_truth)
            aux_losses.append(loss)
            if i < len(self.layers) - 1:
                frames.rotations = frames.rotations.detach()

        aux_loss = (
            torch.stack(aux_losses).mean() if all(l is not None for l in aux_losses) else None
        )
        fape_loss = (
            compute_fape_loss(frames, frames.translations, frames_truth, frames_truth.translations)
            if (frames_truth is not None)
            else None
        )
        batched_frames = Frame(frames.rotations.unsqueeze(-3), frames.translations.unsqueeze(-2))
        coords = Frame.apply(batched_frames, local_coords)

        return coords, fape_loss, aux_loss
