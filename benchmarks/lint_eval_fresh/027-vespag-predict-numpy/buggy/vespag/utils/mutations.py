import torch

GEMME_ALPHABET = "ACDEFGHIKLMNPQRSTVWY"


def mask_non_mutations(gemme_prediction: torch.Tensor, wildtype_sequence) -> torch.Tensor:
    """
    Simply set the predicted effect of the wildtype amino acid at each position (i.e. all non-mutations) to 0
    """
    gemme_prediction[
        torch.arange(len(wildtype_sequence)),
        torch.tensor([GEMME_ALPHABET.index(aa) for aa in wildtype_sequence]),
    ] = 0.0

    return gemme_prediction
