"""Vietoris--Rips complex calculation module(s)."""

import torch
from gph import ripser_parallel
from torch import nn

from torch_topological.nn import PersistenceInformation


class VietorisRipsComplex(nn.Module):
    def __init__(self, dim=1, p=2):
        super().__init__()
        self.dim = dim
        self.p = p
        self.ripser_params = {"return_generators": True, "maxdim": self.dim}

    def forward(self, x):
        return self._forward(torch.as_tensor(x))

    def _forward(self, x):
        """Handle a *single* point cloud."""
        generators = ripser_parallel(x.cpu().detach(), **self.ripser_params)["gens"]
        distances = torch.cdist(x, x, p=self.p)
        persistence_information = self._extract_generators_and_diagrams(distances, generators, dim0=True)
        if self.dim >= 1:
            persistence_information.extend(self._extract_generators_and_diagrams(distances, generators, dim0=False))
        return persistence_information

    def _extract_generators_and_diagrams(self, dist, gens, dim0=False):
        """Extract generators and persistence diagrams from raw data."""
        index = 1 if not dim0 else 0
        gens = gens[index]

        if dim0:
            # In a Vietoris--Rips complex, all vertices are created at
            # time zero.
            creators = torch.zeros_like(torch.as_tensor(gens)[:, 0], device=dist.device)
            destroyers = dist[gens[:, 1], gens[:, 2]]
            persistence_diagram = torch.stack((creators, destroyers), 1)
            return [PersistenceInformation(gens, persistence_diagram, 0)]

        result = []
        for index, gens_ in enumerate(gens):
            creators = dist[gens_[:, 0], gens_[:, 1]]
            destroyers = dist[gens_[:, 2], gens_[:, 3]]
            persistence_diagram = torch.stack((creators, destroyers), 1)
            result.append(PersistenceInformation(gens_, persistence_diagram, index + 1))
        return result
