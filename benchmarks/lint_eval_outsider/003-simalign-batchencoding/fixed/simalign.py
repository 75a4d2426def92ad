from typing import List

import torch
from transformers import BertModel, BertTokenizer


class EmbeddingLoader:
    def __init__(self, model="bert-base-multilingual-cased", device=torch.device("cpu"), layer=8):
        self.model = model
        self.device = device
        self.layer = layer
        self.emb_model = BertModel.from_pretrained(model, output_hidden_states=True)
        self.emb_model.eval()
        self.emb_model.to(self.device)
        self.tokenizer = BertTokenizer.from_pretrained(model)

    def get_embed_list(self, sent_pair: List[List[str]]) -> torch.Tensor:
        if self.emb_model is not None:
            inputs = self.tokenizer(
                sent_pair, is_pretokenized=True, padding=True, truncation=True, return_tensors="pt"
            )
            inputs = inputs.to(self.device)
            outputs = self.emb_model(**inputs)[2][self.layer]
            return outputs[:, 1:-1, :]
        else:
            return None


class SentenceAligner:
    def __init__(self, model: str = "bert", device: str = "cpu", layer: int = 8):
        self.device = torch.device(device)
        self.embed_loader = EmbeddingLoader(model="bert-base-multilingual-cased", device=self.device, layer=layer)

    def get_word_aligns(self, src_sent: List[str], trg_sent: List[str]):
        vectors = self.embed_loader.get_embed_list([src_sent, trg_sent]).cpu().detach().numpy()
        return vectors


aligner = SentenceAligner(model="bert", device="cuda")
print(aligner.get_word_aligns(["Sentence", "in", "English"], ["Satz", "auf", "Deutsch"]))
