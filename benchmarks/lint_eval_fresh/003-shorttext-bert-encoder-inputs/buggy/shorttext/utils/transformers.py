import warnings

import numpy as np
import torch
from transformers import BertTokenizer, BertModel


class BERTObject:
    """The base class for BERT model that contains the embedding model and the tokenizer."""
    def __init__(self, model=None, tokenizer=None, device='cpu'):
        if device == 'cuda':
            if torch.cuda.is_available():
                self.device = torch.device('cuda')
            else:
                warnings.warn("CUDA is not available. Device set to 'cpu'.")
                self.device = torch.device('cpu')
        else:
            self.device = torch.device(device)

        if model is None:
            self.model = BertModel.from_pretrained('bert-base-uncased',
                                                   output_hidden_states=True)\
                            .to(self.device)
        else:
            self.model = model.to(self.device)

        if tokenizer is None:
            self.tokenizer = BertTokenizer.from_pretrained('bert-base-uncased', do_lower_case=True)
        else:
            self.tokenizer = tokenizer

        self.number_hidden_layers = self.model.config.num_hidden_layers


class WrappedBERTEncoder(BERTObject):
    """This is the class that encodes sentences with BERT models."""
    def __init__(self, model=None, tokenizer=None, max_length=48, nbencodinglayers=4, device='cpu'):
        super(WrappedBERTEncoder, self).__init__(model=model, tokenizer=tokenizer, device=device)
        self.max_length = max_length
        self.nbencodinglayers = nbencodinglayers

    def encode_sentences(self, sentences):
        """Encode the sentences into numerical vectors, given by a list of strings."""
        input_ids = []
        for sentence in sentences:
            encoded_dict = self.tokenizer.encode_plus(
                sentence,
                add_special_tokens=True,
                truncation=True,
                max_length=self.max_length,
                pad_to_max_length=True,
                return_tensors='pt'
            )
            input_ids.append(encoded_dict['input_ids'])

        input_ids = torch.cat(input_ids, dim=0)
        segments_id = torch.LongTensor(np.array(input_ids > 0))

        with torch.no_grad():
            _, sentences_embeddings, hidden_state = self.model(input_ids, segments_id)

        alllayers_token_embeddings = torch.stack(hidden_state, dim=0)
        alllayers_token_embeddings = alllayers_token_embeddings.permute(1, 2, 0, 3)
        processed_embeddings = alllayers_token_embeddings[:, :, (self.number_hidden_layers+1-self.nbencodinglayers):, :]
        token_embeddings = torch.reshape(processed_embeddings, (len(sentences), self.max_length, -1))
        return sentences_embeddings, token_embeddings
