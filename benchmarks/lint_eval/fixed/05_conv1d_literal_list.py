# Reduced from https://github.com/pytorch/pytorch/issues/1053
# Scenario 5; the default rule that should find it: DK005 (fixed twin: no finding expected)
import torch as th


class Net(th.nn.Module):
    def __init__(self, size):
        super(Net, self).__init__()
        self.conv1d = th.nn.ModuleList([th.nn.Conv1d(size, 1, 3), th.nn.Conv1d(size, 1, 4), th.nn.Conv1d(size, 1, 5)])


a = Net(300)
a.cuda()
