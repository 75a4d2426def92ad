from typing import Optional

import torch
from torch import nn
from torch.nn import CrossEntropyLoss

from ...modeling_outputs import Seq2SeqLMOutput
from .configuration_whisper import WhisperConfig


class WhisperForConditionalGeneration(nn.Module):
    def __init__(self, config: WhisperConfig, model):
        super().__init__()
        self.config = config
        self.model = model
        self.proj_out = nn.Linear(config.d_model, config.vocab_size, bias=False)

    def forward(
        self,
        input_features: Optional[torch.FloatTensor] = None,
        decoder_input_ids: Optional[torch.LongTensor] = None,
        labels: Optional[torch.LongTensor] = None,
        return_dict: Optional[bool] = None,
    ):
        outputs = self.model(
            input_features,
            decoder_input_ids=decoder_input_ids,
            return_dict=return_dict,
        )
        lm_logits = self.proj_out(outputs[0])

        loss = None
        if labels is not None:
            loss_fct = CrossEntropyLoss()
            # move labels to correct device to enable PP
            labels = labels.to(lm_logits.device)
            loss = loss_fct(lm_logits.view(-1, self.config.vocab_size), labels.reshape(-1))

        if not return_dict:
            output = (lm_logits,) + outputs[1:]
            return ((loss,) + output) if loss is not None else output

        return Seq2SeqLMOutput(loss=loss, logits=lm_logits)
