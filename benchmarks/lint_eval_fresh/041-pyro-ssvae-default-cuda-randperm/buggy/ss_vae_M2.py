import argparse

import torch
import torch.nn as nn

import pyro
import pyro.distributions as dist
from pyro.infer import SVI, config_enumerate, TraceEnum_ELBO
from pyro.nn import ClippedSigmoid, ClippedSoftmax
from pyro.optim import Adam
from utils.custom_mlp import MLP, Exp
from utils.mnist_cached import MNISTCached, setup_data_loaders


class SSVAE(nn.Module):
    """
    This class encapsulates the parameters (neural networks) and models & guides needed to train a
    semi-supervised variational auto-encoder on the MNIST image dataset
    """
    def __init__(self, output_size=10, input_size=784, z_dim=50, hidden_layers=(500,),
                 epsilon_scale=1e-7, config_enum=None, use_cuda=False):

        super(SSVAE, self).__init__()

        self.output_size = output_size
        self.input_size = input_size
        self.z_dim = z_dim
        self.hidden_layers = hidden_layers
        self.epsilon_scale = epsilon_scale
        self.allow_broadcast = config_enum == 'parallel'
        self.use_cuda = use_cuda

        self.setup_networks()

    def setup_networks(self):

        z_dim = self.z_dim
        hidden_sizes = self.hidden_layers

        self.encoder_y = MLP([self.input_size] + hidden_sizes + [self.output_size],
                             activation=nn.Softplus,
                             output_activation=ClippedSoftmax,
                             epsilon_scale=self.epsilon_scale,
                             allow_broadcast=self.allow_broadcast,
                             use_cuda=self.use_cuda)

        self.encoder_z = MLP([self.input_size + self.output_size] +
                             hidden_sizes + [[z_dim, z_dim]],
                             activation=nn.Softplus,
                             output_activation=[None, Exp],
                             allow_broadcast=self.allow_broadcast,
                             use_cuda=self.use_cuda)

        self.decoder = MLP([z_dim + self.output_size] +
                           hidden_sizes + [self.input_size],
                           activation=nn.Softplus,
                           output_activation=ClippedSigmoid,
                           epsilon_scale=self.epsilon_scale,
                           allow_broadcast=self.allow_broadcast,
                           use_cuda=self.use_cuda)

        # using GPUs for faster training of the networks
        if self.use_cuda:
            self.cuda()

    def model(self, xs, ys=None):
        # register this pytorch module and all of its sub-modules with pyro
        pyro.module("ss_vae", self)

        batch_size = xs.size(0)
        with pyro.iarange("data"):

            # sample the handwriting style from the constant prior distribution
            prior_loc = torch.zeros([batch_size, self.z_dim])
            prior_scale = torch.ones([batch_size, self.z_dim])
            zs = pyro.sample("z", dist.Normal(prior_loc, prior_scale).independent(1))

            # if the label y (which digit to write) is supervised, sample from the
            # constant prior, otherwise, observe the value (i.e. score it against the constant prior)
            alpha_prior = torch.ones([batch_size, self.output_size]) / (1.0 * self.output_size)
            ys = pyro.sample("y", dist.OneHotCategorical(alpha_prior), obs=ys)

            loc = self.decoder.forward([zs, ys])
            pyro.sample("x", dist.Bernoulli(loc).independent(1), obs=xs)

    def guide(self, xs, ys=None):
        with pyro.iarange("data"):
            if ys is None:
                alpha = self.encoder_y.forward(xs)
                ys = pyro.sample("y", dist.OneHotCategorical(alpha))

            loc, scale = self.encoder_z.forward([xs, ys])
            pyro.sample("z", dist.Normal(loc, scale).independent(1))

    def classifier(self, xs):
        alpha = self.encoder_y.forward(xs)

        # get the index (digit) that corresponds to
        # the maximum predicted class probability
        res, ind = torch.topk(alpha, 1)

        # convert the digit(s) to one-hot tensor(s)
        ys = torch.zeros(alpha.size())
        ys = ys.scatter_(1, ind, 1.0)
        return ys


def run_inference_for_epoch(data_loaders, losses, periodic_interval_batches):
    """
    runs the inference algorithm for an epoch
    returns the values of all losses separately on supervised and unsupervised parts
    """
    num_losses = len(losses)

    sup_batches = len(data_loaders["sup"])
    unsup_batches = len(data_loaders["unsup"])
    batches_per_epoch = sup_batches + unsup_batches

    epoch_losses_sup = [0.] * num_losses
    epoch_losses_unsup = [0.] * num_losses

    # setup the iterators for training data loaders
    sup_iter = iter(data_loaders["sup"])
    unsup_iter = iter(data_loaders["unsup"])

    ctr_sup = 0
    for i in range(batches_per_epoch):

        is_supervised = (i % periodic_interval_batches == 1) and ctr_sup < sup_batches

        # extract the corresponding batch
        if is_supervised:
            (xs, ys) = next(sup_iter)
            ctr_sup += 1
        else:
            (xs, ys) = next(unsup_iter)

        for loss_id in range(num_losses):
            if is_supervised:
                new_loss = losses[loss_id].step(xs, ys)
                epoch_losses_sup[loss_id] += new_loss
            else:
                new_loss = losses[loss_id].step(xs)
                epoch_losses_unsup[loss_id] += new_loss

    return epoch_losses_sup, epoch_losses_unsup


def get_accuracy(data_loader, classifier_fn, batch_size):
    """
    compute the accuracy over the supervised training set or the testing set
    """
    predictions, actuals = [], []

    for (xs, ys) in data_loader:
        predictions.append(classifier_fn(xs))
        actuals.append(ys)

    accurate_preds = 0
    for pred, act in zip(predictions, actuals):
        for i in range(pred.size(0)):
            v = torch.sum(pred[i] == act[i])
            accurate_preds += (v.item() == 10)

    return (accurate_preds * 1.0) / (len(predictions) * batch_size)


def main(args):
    """
    run inference for SS-VAE
    :param args: arguments for SS-VAE
    :return: None
    """
    if args.cuda:
        torch.set_default_tensor_type('torch.cuda.FloatTensor')

    ss_vae = SSVAE(z_dim=args.z_dim,
                   hidden_layers=args.hidden_layers,
                   use_cuda=args.cuda,
                   config_enum=args.enum_discrete)

    adam_params = {"lr": args.learning_rate, "betas": (args.beta_1, 0.999)}
    optimizer = Adam(adam_params)

    guide = config_enumerate(ss_vae.guide, args.enum_discrete)
    loss_basic = SVI(ss_vae.model, guide, optimizer, loss=TraceEnum_ELBO(max_iarange_nesting=1))
    losses = [loss_basic]

    data_loaders = setup_data_loaders(MNISTCached, args.cuda, args.batch_size, sup_num=args.sup_num)

    periodic_interval_batches = int(MNISTCached.train_data_size / (1.0 * args.sup_num))

    for i in range(0, args.num_epochs):
        epoch_losses_sup, epoch_losses_unsup = \
            run_inference_for_epoch(data_loaders, losses, periodic_interval_batches)

        validation_accuracy = get_accuracy(data_loaders["valid"], ss_vae.classifier, args.batch_size)
        print("{} epoch: losses {} {} validation accuracy {}".format(
            i, epoch_losses_sup, epoch_losses_unsup, validation_accuracy))


if __name__ == "__main__":

    parser = argparse.ArgumentParser(description="SS-VAE")

    parser.add_argument('--cuda', action='store_true',
                        help="use GPU(s) to speed up training")
    parser.add_argument('-ne', '--num-epochs', default=100, type=int)
    parser.add_argument('-enum', '--enum-discrete', default=None)
    parser.add_argument('-sup', '--sup-num', default=3000, type=float)
    parser.add_argument('-zd', '--z-dim', default=50, type=int)
    parser.add_argument('-hl', '--hidden-layers', nargs='+', default=[500], type=int)
    parser.add_argument('-lr', '--learning-rate', default=0.0003, type=float)
    parser.add_argument('-b1', '--beta-1', default=0.9, type=float)
    parser.add_argument('-bs', '--batch-size', default=200, type=int)
    args = parser.parse_args()

    main(args)
