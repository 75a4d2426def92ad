###############################################################################
# Language Modeling on Wikitext-2
#
# This file generates new sentences sampled from the language model
###############################################################################

import argparse

import torch

import data

parser = argparse.ArgumentParser(description="PyTorch Wikitext-2 Language Model")
parser.add_argument("--data", type=str, default="./data/wikitext-2")
parser.add_argument("--checkpoint", type=str, default="./model.pt")
parser.add_argument("--outf", type=str, default="generated.txt")
parser.add_argument("--words", type=int, default="1000")
parser.add_argument("--cuda", action="store_true", help="use CUDA")
parser.add_argument("--temperature", type=float, default=1.0)
args = parser.parse_args()

device = torch.device("cuda" if args.cuda else "cpu")

with open(args.checkpoint, "rb") as f:
    model = torch.load(f, map_location=device)
model.eval()

corpus = data.Corpus(args.data)
ntokens = len(corpus.dictionary)

hidden = model.init_hidden(1)
input = torch.randint(ntokens, (1, 1), dtype=torch.long).to(device)

with open(args.outf, "w") as outf:
    with torch.no_grad():  # no tracking history
        for i in range(args.words):
            output, hidden = model(input, hidden)
            word_weights = output.squeeze().div(args.temperature).exp().cpu()
            word_idx = torch.multinomial(word_weights, 1)[0]
            input.fill_(word_idx)
            word = corpus.dictionary.idx2word[word_idx]
            outf.write(word + ("\n" if i % 20 == 19 else " "))
