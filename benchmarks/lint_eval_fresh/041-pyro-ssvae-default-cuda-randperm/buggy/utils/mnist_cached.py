from functools import reduce

import torch
from torch.utils.data import DataLoader
from torchvision.datasets import MNIST


# transformations for MNIST data
def fn_x_mnist(x, use_cuda):
    # normalize pixel values of the image to be in [0,1] instead of [0,255]
    xp = x * (1. / 255)

    # transform x to a linear tensor from bx * a1 * a2 * ... --> bs * A
    xp_1d_size = reduce(lambda a, b: a * b, xp.size()[1:])
    xp = xp.view(-1, xp_1d_size)

    # send the data to GPU(s)
    if use_cuda:
        xp = xp.cuda()

    return xp


def fn_y_mnist(y, use_cuda):
    yp = torch.zeros(y.size(0), 10)

    # send the data to GPU(s)
    if use_cuda:
        yp = yp.cuda()
        y = y.cuda()

    # transform the label y (integer between 0 and 9) to a one-hot
    yp = yp.scatter_(1, y.view(-1, 1), 1.0)
    return yp


def split_sup_unsup_valid(X, y, sup_num, validation_num=10000):
    X_valid, y_valid = X[:validation_num], y[:validation_num]
    X, y = X[validation_num:], y[validation_num:]
    X_sup, y_sup = X[:sup_num], y[:sup_num]
    X_unsup, y_unsup = X[sup_num:], y[sup_num:]
    return X_sup, y_sup, X_unsup, y_unsup, X_valid, y_valid


class MNISTCached(MNIST):
    """
    a wrapper around MNIST to load and cache the transformed data
    once at the beginning of the inference
    """

    train_data_size = 50000
    train_data_sup, train_labels_sup = None, None
    train_data_unsup, train_labels_unsup = None, None
    validation_size = 10000
    data_valid, labels_valid = None, None

    def __init__(self, mode, sup_num, use_cuda=True, *args, **kwargs):
        super(MNISTCached, self).__init__(train=True, *args, **kwargs)

        self.mode = mode
        assert mode in ["sup", "unsup", "valid"], "invalid train option values"

        self.train_data = fn_x_mnist(self.train_data.float(), use_cuda)
        self.train_labels = fn_y_mnist(self.train_labels, use_cuda)

        if MNISTCached.train_data_sup is None:
            MNISTCached.train_data_sup, MNISTCached.train_labels_sup, \
                MNISTCached.train_data_unsup, MNISTCached.train_labels_unsup, \
                MNISTCached.data_valid, MNISTCached.labels_valid = \
                split_sup_unsup_valid(self.train_data, self.train_labels, int(sup_num))

        if mode == "sup":
            self.train_data, self.train_labels = MNISTCached.train_data_sup, MNISTCached.train_labels_sup
        elif mode == "unsup":
            self.train_data, self.train_labels = MNISTCached.train_data_unsup, MNISTCached.train_labels_unsup
        else:
            self.train_data, self.train_labels = MNISTCached.data_valid, MNISTCached.labels_valid

    def __getitem__(self, index):
        return self.train_data[index], self.train_labels[index]


def setup_data_loaders(dataset, use_cuda, batch_size, sup_num=None, root='./data', download=True, **kwargs):
    """
        helper function for setting up pytorch data loaders for a semi-supervised dataset
    :param dataset: the data to use
    :param use_cuda: use GPU(s) for training
    :param batch_size: size of a batch of data to output when iterating over the data loaders
    :return: data loaders for supervised and un-supervised training data and validation data
    """
    if 'num_workers' not in kwargs:
        kwargs = {'num_workers': 0, 'pin_memory': False}

    cached_data = {}
    loaders = {}
    for mode in ["unsup", "sup", "valid"]:
        cached_data[mode] = dataset(root=root, mode=mode, download=download,
                                    sup_num=sup_num, use_cuda=use_cuda)
        loaders[mode] = DataLoader(cached_data[mode], batch_size=batch_size, shuffle=True, **kwargs)

    return loaders
