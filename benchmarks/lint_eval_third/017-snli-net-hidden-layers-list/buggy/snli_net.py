import torch
import torch.nn as nn


class SNLINet(nn.Module):
    def __init__(self, options):
        super(SNLINet, self).__init__()
        indim = options['n_emb'] * 2
        self.hids = []
        for li in range(options['n_layers']):
            self.hids.append([
                nn.Linear(indim, options['n_hid']),
                eval('nn.{}'.format(options['act']))()
                ])
            indim = options['n_hid']

        self.classifier = nn.Linear(options['n_hid'], 3)

    def forward(self, premise, hypothesis):
        h = torch.cat([premise, hypothesis], dim=1)
        for linear, act in self.hids:
            h = act(linear(h))
        return self.classifier(h)


options = {'n_emb': 300, 'n_hid': 256, 'n_layers': 2, 'act': 'ReLU'}
net = SNLINet(options).cuda()
optimizer = torch.optim.Adam(net.parameters(), lr=1e-3)


def train_step(premise, hypothesis, label):
    logits = net(premise.cuda(), hypothesis.cuda())
    loss = nn.functional.cross_entropy(logits, label.cuda())
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
    return loss.item()
