# Reduced from https://github.com/pytorch/pytorch/issues/15005
# Scenario 5; the default rule that should find it: DK005 (buggy twin)
import torch.nn as nn


class Test(nn.Module):
    def __init__(self, input_features, num_classes):
        super(Test, self).__init__()
        self.softmaxes = []
        for i in range(4):
            self.softmaxes.append(nn.Linear(input_features, num_classes[i]))

    def forward(self, batch_in):
        return [self.softmaxes[i](batch_in) for i in range(4)]
