from pathlib import Path

import torch
from safetensors.torch import load_file as load_safetensors

from .models.s3gen import S3Gen
from .models.t3 import T3
from .models.t3.modules.t3_config import T3Config
from .models.tokenizers import MTLTokenizer
from .models.voice_encoder import VoiceEncoder


class ChatterboxMultilingualTTS:
    def __init__(self, t3, s3gen, ve, tokenizer, device):
        self.t3 = t3
        self.s3gen = s3gen
        self.ve = ve
        self.tokenizer = tokenizer
        self.device = device

    @classmethod
    def from_local(cls, ckpt_dir, device) -> 'ChatterboxMultilingualTTS':
        ckpt_dir = Path(ckpt_dir)

        ve = VoiceEncoder()
        ve.load_state_dict(
            torch.load(ckpt_dir / "ve.pt", weights_only=True, map_location=torch.device(device))
        )
        ve.to(device).eval()

        t3 = T3(T3Config.multilingual())
        t3_state = load_safetensors(ckpt_dir / "t3_mtl23ls_v2.safetensors")
        if "model" in t3_state.keys():
            t3_state = t3_state["model"][0]
        t3.load_state_dict(t3_state)
        t3.to(device).eval()

        s3gen = S3Gen()
        s3gen.load_state_dict(
            torch.load(ckpt_dir / "s3gen.pt", weights_only=True, map_location=torch.device(device))
        )
        s3gen.to(device).eval()

        tokenizer = MTLTokenizer(str(ckpt_dir / "grapheme_mtl_merged_expanded_v1.json"))
        return cls(t3, s3gen, ve, tokenizer, device)
