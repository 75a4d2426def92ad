"""Multi-facet recommender (reduced: loading the pretrained embeddings and a checkpoint)."""
import os

import torch

from .mfr_src import model as model_code


def load_ext_emb(emb_file, target_emb_sz, idx2word_freq, num_special_token, device):
    num_w = len(idx2word_freq)
    if len(emb_file) > 0:
        if emb_file[-3:] == '.pt':
            target_emb = torch.load(emb_file, map_location=device)
            target_emb.requires_grad = False
            target_emb_sz = target_emb.size(1)
        else:
            target_emb = torch.randn(num_w, target_emb_sz, device=device, requires_grad=False)
    else:
        target_emb = torch.randn(num_w, target_emb_sz, device=device, requires_grad=False)
    target_emb[:num_special_token, :] = 0
    return target_emb, target_emb_sz


class MultiFacetRecommender(object):
    def __init__(self, model_checkpoint_dir, use_cuda=True, continue_train=True):
        self.model_checkpoint_dir = model_checkpoint_dir
        self.use_cuda = use_cuda and torch.cuda.is_available()
        self.device = torch.device("cuda" if self.use_cuda else "cpu")
        self.continue_train = continue_train

    def build(self, ntokens, emb_file, idx2word_freq):
        user_emb, target_emb_sz = load_ext_emb(emb_file, 200, idx2word_freq, 3, self.device)
        encoder = model_code.SEQ2EMB(ntokens, 200).to(self.device)
        decoder = model_code.EMB2SEQ(encoder.output_dim, target_emb_sz).to(self.device)

        if self.continue_train:
            encoder.load_state_dict(torch.load(os.path.join(self.model_checkpoint_dir, 'encoder.pt'),
                                               map_location=self.device))
            decoder.load_state_dict(torch.load(os.path.join(self.model_checkpoint_dir, 'decoder.pt'),
                                               map_location=self.device))
            user_emb_load = torch.load(os.path.join(self.model_checkpoint_dir, 'user_emb.pt'),
                                       map_location=self.device)
            user_emb = user_emb.new_tensor(user_emb_load)
        return encoder, decoder, user_emb
