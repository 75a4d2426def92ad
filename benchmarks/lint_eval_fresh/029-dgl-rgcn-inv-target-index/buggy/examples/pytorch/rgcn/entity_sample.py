import argparse

import dgl
import torch as th
import torch.nn.functional as F
from dgl.dataloading import DataLoader, MultiLayerNeighborSampler
from torchmetrics.functional import accuracy

from entity_utils import load_data
from model import RGCN


def init_dataloaders(args, g, train_idx, target_idx, device):
    fanouts = [int(fanout) for fanout in args.fanout.split(',')]
    sampler = MultiLayerNeighborSampler(fanouts)
    train_loader = DataLoader(
        g,
        target_idx[train_idx],
        sampler,
        device=device,
        batch_size=args.batch_size,
        shuffle=True,
        drop_last=False)
    return train_loader


def process_batch(inv_target, batch):
    _, seeds, blocks = batch
    seeds = inv_target[seeds]

    for blc in blocks:
        blc.edata['norm'] = dgl.norm_by_dst(blc).unsqueeze(1)

    return seeds, blocks


def train(model, train_loader, inv_target, labels, optimizer):
    model.train()

    for sample_data in train_loader:
        seeds, blocks = process_batch(inv_target, sample_data)
        logits = model.forward(blocks)
        loss = F.cross_entropy(logits, labels[seeds])

        optimizer.zero_grad()
        loss.backward()
        optimizer.step()

        train_acc = accuracy(logits.argmax(dim=1), labels[seeds]).item()

    return train_acc, loss.item()


def main(args):
    g, num_rels, num_classes, labels, train_idx, test_idx, target_idx, inv_target = load_data(
        args.dataset, inv_target=True)

    if args.gpu >= 0 and th.cuda.is_available():
        device = th.device(args.gpu)
    else:
        device = th.device('cpu')

    train_loader = init_dataloaders(args, g, train_idx, target_idx, args.gpu)

    model = RGCN(g.num_nodes(), args.n_hidden, num_classes, num_rels, ns_mode=True)
    labels = labels.to(device)
    model = model.to(device)

    optimizer = th.optim.Adam(model.parameters(), lr=1e-2, weight_decay=args.wd)

    for epoch in range(args.n_epochs):
        train_acc, loss = train(model, train_loader, inv_target, labels, optimizer)


if __name__ == '__main__':
    parser = argparse.ArgumentParser(description='RGCN for entity classification with sampling')
    parser.add_argument("--n-hidden", type=int, default=16)
    parser.add_argument("--gpu", type=int, default=0)
    parser.add_argument("--n-epochs", type=int, default=50)
    parser.add_argument("-d", "--dataset", type=str, required=True)
    parser.add_argument("--wd", type=float, default=5e-4)
    parser.add_argument("--fanout", type=str, default="4, 4")
    parser.add_argument("--batch-size", type=int, default=100)
    main(parser.parse_args())
