from argparse import ArgumentParser

import pandas as pd
import torch

from model import SeqNN

parser = ArgumentParser()
parser.add_argument("--seqsize", type=int, default=120)
parser.add_argument("--gpu", type=int, default=0)
parser.add_argument("--blocks", default=[256, 256, 128, 128, 64, 64, 32, 32], nargs="+", type=int)
parser.add_argument("--target", type=str, help="path to a testing dataset")
parser.add_argument("--model", type=str, default="model/model_80.pth", help="path to a .pth file where parameters are stored")
args = parser.parse_args()

print("Loading model...")
device = torch.device(f"cuda:{args.gpu}")
model = SeqNN(seqsize=args.seqsize, block_sizes=args.blocks).to(device)
model.load_state_dict(torch.load(args.model, map_location=device))
model.eval()

df = pd.read_table(args.target, sep=" ", header=None)
df.columns = ["seq", "bin", "fold"][: len(df.columns)]
