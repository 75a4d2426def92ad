from .mutations import GEMME_ALPHABET, mask_non_mutations
from .utils import get_device
from .model import DEFAULT_MODEL_PARAMETERS, ScoreNormalizer, load_model
