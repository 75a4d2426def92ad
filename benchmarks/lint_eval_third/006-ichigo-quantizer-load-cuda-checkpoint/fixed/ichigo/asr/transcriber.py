import time
import warnings
from pathlib import Path
from typing import Dict, Optional, Union

import torch
import torchaudio
import yaml
from huggingface_hub import hf_hub_download

from ichigo.asr.arch.quantizer import Quantizer
from ichigo.asr.arch.r2t import Rep2Text
from ichigo.asr.arch.s2r import Speech2Rep


def load_quantizer(ref, config):
    if ":" in ref:
        repo_id, filename = ref.split(":", 1)
        local_filename = hf_hub_download(repo_id=repo_id, filename=filename)
    else:
        local_filename = ref

    spec = torch.load(local_filename, map_location="cpu")
    model_state_dict = {
        k.replace("model.", ""): v for k, v in spec["state_dict"].items()
    }

    quantizer = Quantizer(config)
    quantizer.load_state_dict(model_state_dict, strict=False)
    quantizer.eval()

    return quantizer


class IchigoASR:
    def __init__(
        self,
        config: str = "ichigo-asr-2501-en-vi",
    ):
        # Load config
        if not config.endswith(".yaml"):
            config_path = Path(__file__).parent / "config" / f"{config}.yaml"
        else:
            config_path = Path(config)

        with open(config_path) as f:
            self.config = yaml.safe_load(f)

        model_path = f"{self.config['model_hub']}:{self.config['model_name']}"

        self.s2r = Speech2Rep(self.config)
        self.quantizer = load_quantizer(ref=model_path, config=self.config)
        self.r2t = Rep2Text(self.config)

        self.device = "cuda" if torch.cuda.is_available() else "cpu"
        self.s2r.to(self.device)
        self.quantizer.to(self.device)
        self.r2t.to(self.device)

    def preprocess(self, audio: torch.Tensor, sample_rate: int) -> torch.Tensor:
        if sample_rate != 16000:
            audio = torchaudio.functional.resample(audio, sample_rate, 16000)
        return audio.to(self.device)

    def get_stoks(self, input_path: Union[str, Path]):
        """Support return stoks for a single file"""
        input_path = Path(input_path)
        wav, sr = torchaudio.load(str(input_path))
        wav = self.preprocess(wav, sr)

        embs, n_frames = self.s2r(wav)
        stoks = self.quantizer(embs, n_frames, return_stoks=True)
        return stoks

    def decode_stoks(self, stoks: torch.Tensor):
        embeds = self.quantizer.dequantize(stoks)
