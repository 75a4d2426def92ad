import copy

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F

from utils import load_data, load_model


class AugLag(nn.Module):
    def __init__(self, n_bits, w, b, step_size):
        super(AugLag, self).__init__()
        self.n_bits = n_bits
        self.b = nn.Parameter(torch.tensor(b).float(), requires_grad=True)
        self.w_twos = nn.Parameter(torch.zeros([w.shape[0], w.shape[1], self.n_bits]), requires_grad=True)
        self.step_size = step_size
        base = [2**i for i in range(self.n_bits - 1, -1, -1)]
        base[0] = -base[0]
        self.base = nn.Parameter(torch.tensor([[base]]).float())

    def forward(self, x):
        w = self.w_twos * self.base
        w = torch.sum(w, dim=2) * self.step_size
        return F.linear(x, w, self.b)


def attack(auglag_ori, all_data, labels, labels_cuda, target_idx, aux_idx, n_aux):
    auglag = copy.deepcopy(auglag_ori)
    all_idx = np.append(aux_idx, target_idx)
    output = auglag(all_data[all_idx])
    loss = F.cross_entropy(output, labels_cuda[all_idx].long())
    loss.backward()

    output = auglag(all_data)
    _, pred = output.topk(1, 1, True, True)
    pred = pred.squeeze(1)
    pa_acc = len([i for i in range(len(output)) if labels_cuda[i] == pred[i] and i != target_idx and i not in aux_idx]) / \
        (len(labels) - 1 - n_aux)
    return pa_acc


def main():
    arch = "resnet20_quan"
    bit_length = 8
    weight, bias, step_size = load_model(arch, bit_length)
    all_data, labels = load_data(arch, bit_length)
    labels_cuda = labels.cuda()

    auglag = AugLag(bit_length, weight, bias, step_size).cuda()

    attack_idx = 9490
    aux_idx = np.random.choice([i for i in range(len(labels)) if i != attack_idx], 128, replace=False)
    print(attack(auglag, all_data, labels, labels_cuda, attack_idx, aux_idx, 128))


if __name__ == "__main__":
    main()
