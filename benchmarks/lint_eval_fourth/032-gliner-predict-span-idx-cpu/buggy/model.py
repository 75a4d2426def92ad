import torch
from torch import nn


class GLiNER(nn.Module):
    def __init__(self, token_rep_layer, rnn, span_rep_layer, prompt_rep_layer, entity_token="<<ENT>>", sep_token="<<SEP>>"):
        super().__init__()
        self.token_rep_layer = token_rep_layer
        self.rnn = rnn
        self.span_rep_layer = span_rep_layer
        self.prompt_rep_layer = prompt_rep_layer
        self.entity_token = entity_token
        self.sep_token = sep_token

    def compute_score_eval(self, x):
        assert isinstance(x['classes_to_id'], dict), "classes_to_id must be a dict"

        span_idx = x['span_idx'] * x['span_mask'].unsqueeze(-1)

        all_types = list(x['classes_to_id'].keys())
        entity_prompt = []
        for entity_type in all_types:
            entity_prompt.append(self.entity_token)
            entity_prompt.append(entity_type)
        entity_prompt.append(self.sep_token)
        prompt_entity_length = len(entity_prompt)

        tokens_p = [entity_prompt + tokens for tokens in x['tokens']]
        seq_length_p = x['seq_length'] + prompt_entity_length

        out = self.token_rep_layer(tokens_p, seq_length_p)
        word_rep_w_prompt = out["embeddings"]
        mask_w_prompt = out["mask"]

        word_rep = word_rep_w_prompt[:, prompt_entity_length:, :]
        mask = mask_w_prompt[:, prompt_entity_length:]

        entity_type_rep = word_rep_w_prompt[:, :prompt_entity_length - 1, :]
        entity_type_rep = entity_type_rep[:, 0::2, :]
        entity_type_rep = self.prompt_rep_layer(entity_type_rep)

        word_rep = self.rnn(word_rep, mask)

        span_rep = self.span_rep_layer(word_rep, span_idx)

        local_scores = torch.einsum('BLKD,BCD->BLKC', span_rep, entity_type_rep)
        return local_scores

    @torch.no_grad()
    def predict(self, x, flat_ner=False, threshold=0.5):
        local_scores = self.compute_score_eval(x)
        return torch.sigmoid(local_scores) > threshold
