from pathlib import Path

import h5py
import numpy as np
import torch

from vespag.utils import (
    DEFAULT_MODEL_PARAMETERS,
    ScoreNormalizer,
    get_device,
    load_model,
    mask_non_mutations,
)


def generate_predictions(
    fasta_sequences: dict,
    embedding_file: Path,
    normalize_scores: bool = True,
    embedding_type: str = "esm2",
) -> dict:
    device = get_device()
    params = DEFAULT_MODEL_PARAMETERS
    params["embedding_type"] = embedding_type
    model = load_model(**params).eval().to(device, dtype=torch.float)

    embeddings = {
        id: torch.from_numpy(np.array(emb[()], dtype=np.float32))
        for id, emb in h5py.File(embedding_file).items()
    }

    vespag_scores = {}
    with torch.no_grad():
        for id, sequence in fasta_sequences.items():
            embedding = embeddings[id].to(device).unsqueeze(0)
            y = model(embedding).squeeze(0)
            y = mask_non_mutations(y, sequence)
            vespag_scores[id] = y.detach().numpy()

        if normalize_scores:
            normalizer = ScoreNormalizer("minmax")
            normalizer.fit(np.concatenate([y.flatten() for y in vespag_scores.values()]))
    return vespag_scores
