import os

import numpy as np
import torch

from utils.btc_model import BTC_model
from utils.hparams import HParams
from utils.mir_eval_modules import audio_file_to_features, idx2voca_chord
from model.linear_mt_attn_ck import FeedforwardModelMTAttnCK


class Music2emo:
    def __init__(
        self,
        model_weights = "saved_models/J_all.ckpt"
    ):
        use_cuda = torch.cuda.is_available()
        self.device = torch.device("cuda" if use_cuda else "cpu")
        self.model_weights = model_weights

        self.music2emo_model = FeedforwardModelMTAttnCK(
            input_size= 768 * 2,
            output_size_classification=56,
            output_size_regression=2
        )

        checkpoint = torch.load(self.model_weights, map_location=self.device, weights_only=False)
        state_dict = checkpoint["state_dict"]
        state_dict = {key.replace("model.", ""): value for key, value in state_dict.items()}
        model_keys = set(self.music2emo_model.state_dict().keys())
        filtered_state_dict = {key: value for key, value in state_dict.items() if key in model_keys}
        self.music2emo_model.load_state_dict(filtered_state_dict)

        self.music2emo_model.to(self.device)
        self.music2emo_model.eval()

    def predict(self, audio, threshold = 0.5):
        # --- Chord feature extract ---
        config = HParams.load("./inference/data/run_config.yaml")
        config.feature['large_voca'] = True
        config.model['num_chords'] = 170
        model_file = './inference/data/btc_model_large_voca.pt'
        idx_to_chord = idx2voca_chord()
        model = BTC_model(config=config.model).to(self.device)

        if os.path.isfile(model_file):
            checkpoint = torch.load(model_file, map_location=self.device)
            mean = checkpoint['mean']
            std = checkpoint['std']
            model.load_state_dict(checkpoint['model'])

        feature, feature_per_second, song_length_second = audio_file_to_features(audio, config)
        feature = feature.T
        feature = (feature - mean) / std
        n_timestep = config.model['timestep']

        num_pad = n_timestep - (feature.shape[0] % n_timestep)
        feature = np.pad(feature, ((0, num_pad), (0, 0)), mode="constant", constant_values=0)
        num_instance = feature.shape[0] // n_timestep

        chords = []
        with torch.no_grad():
            model.eval()
            feature = torch.tensor(feature, dtype=torch.float32).unsqueeze(0).to(self.device)
            for t in range(num_instance):
                self_attn_output, _ = model.self_attn_layers(feature[:, n_timestep * t:n_timestep * (t + 1), :])
                prediction, _ = model.output_layer(self_attn_output)
                prediction = prediction.squeeze()
                chords.extend(idx_to_chord[int(p)] for p in prediction.tolist())
        return chords
