import torch
from einops import repeat
from torch import nn

from src.utils import posemb_sincos_1d, posemb_sincos_2d


class Encoder(nn.Module):
    def __init__(self, mask_ratio, image_size, patch_size, dim, band_groups, emb_dropout, device):
        super().__init__()
        self.mask_ratio = mask_ratio
        self.dim = dim
        self.band_groups = band_groups
        self.device = device
        self.num_spatial_patches = (image_size // patch_size) ** 2
        self.num_group_patches = len(band_groups)

        pos_dim = band_dim = dim // 2

        # Fix the position & band embedding to sine & cosine functions
        self.pos_encoding = posemb_sincos_2d(
            h=image_size // patch_size, w=image_size // patch_size, dim=pos_dim
        )  # [L D/2]
        self.band_encoding = posemb_sincos_1d(
            length=self.num_group_patches, dim=band_dim
        )  # [G D/2]

        # Freeze the weights of position & band encoding
        self.pos_encoding = self.pos_encoding.to(self.device).requires_grad_(False)
        self.band_encoding = self.band_encoding.to(self.device).requires_grad_(False)

        self.dropout = nn.Dropout(emb_dropout)

    def add_encodings(self, patches):
        B, G, L, D = patches.shape
        pos_encoding = repeat(
            self.pos_encoding, "L D -> 1 repeat L D", repeat=G
        )  # [1 G L D/2]
        band_encoding = repeat(
            self.band_encoding, "G D -> 1 G repeat D", repeat=L
        )  # [1 G L D/2]
        pos_band_encoding = torch.cat(
            (pos_encoding, band_encoding), dim=-1
        )  # [1 G L D]
        patches = patches + pos_band_encoding  # [B G L D] + [1 G L D] - broadcasting
        return self.dropout(patches)

    def forward(self, patches):
        return self.add_encodings(patches)


class CLAY(nn.Module):
    def __init__(self, mask_ratio, image_size, patch_size, dim, band_groups, emb_dropout=0.0):
        super().__init__()
        device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
        self.encoder = Encoder(
            mask_ratio=mask_ratio,
            image_size=image_size,
            patch_size=patch_size,
            dim=dim,
            band_groups=band_groups,
            emb_dropout=emb_dropout,
            device=device,
        )

    def forward(self, patches):
        return self.encoder(patches)
