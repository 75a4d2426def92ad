import torch

from torchtnt.framework.auto_unit import AutoUnit


class MyUnit(AutoUnit):
    def compute_loss(self, state, data):
        inputs, targets = data
        outputs = self.module(inputs)
        return torch.nn.functional.cross_entropy(outputs, targets), outputs


def main():
    module = torch.nn.Linear(128, 10)
    unit = MyUnit(module=module, strategy="ddp")
    return unit
