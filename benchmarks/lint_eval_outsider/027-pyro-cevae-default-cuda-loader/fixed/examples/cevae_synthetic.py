"""This example demonstrates how to use the Causal Effect Variational Autoencoder."""

import argparse

import torch

import pyro
import pyro.distributions as dist
from pyro.contrib.cevae import CEVAE


def generate_data(args):
    z = dist.Bernoulli(0.5).sample([args.num_data])
    x = dist.Normal(z, 5 * z + 3 * (1 - z)).sample([args.feature_dim]).t()
    t = dist.Bernoulli(0.75 * z + 0.25 * (1 - z)).sample()
    y = dist.Bernoulli(logits=3 * (z + 2 * (2 * t - 2))).sample()
    return x, t, y


def main(args):
    if args.cuda:
        torch.set_default_tensor_type("torch.cuda.FloatTensor")

    pyro.set_rng_seed(args.seed)
    x_train, t_train, y_train = generate_data(args)
    cevae = CEVAE(feature_dim=args.feature_dim, num_samples=10)
    cevae.fit(x_train, t_train, y_train, num_epochs=args.num_epochs, batch_size=args.batch_size)


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description="Causal Effect Variational Autoencoder")
    parser.add_argument("--num-data", default=1000, type=int)
    parser.add_argument("--feature-dim", default=5, type=int)
    parser.add_argument("-n", "--num-epochs", default=50, type=int)
    parser.add_argument("-b", "--batch-size", default=100, type=int)
    parser.add_argument("--seed", default=1234567890, type=int)
    parser.add_argument("--cuda", action="store_true")
    main(parser.parse_args())
