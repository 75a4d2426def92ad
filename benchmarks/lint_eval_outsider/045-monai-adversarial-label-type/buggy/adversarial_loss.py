import torch
from torch.nn.modules.loss import _Loss


class PatchAdversarialLoss(_Loss):
    """Adversarial loss on a (multi-scale) patch discriminator: least squares, BCE or hinge."""

    def __init__(self, reduction: str = "mean", criterion: str = "least_squares"):
        super().__init__(reduction=reduction)
        self.real_label = 1.0
        self.fake_label = 0.0
        if criterion == "bce":
            self.activation = torch.nn.Sigmoid()
            self.loss_fct = torch.nn.BCELoss(reduction=reduction)
        elif criterion == "hinge":
            self.activation = torch.nn.Tanh()
            self.fake_label = -1.0
        else:
            self.activation = torch.nn.LeakyReLU(negative_slope=0.05)
            self.loss_fct = torch.nn.MSELoss(reduction=reduction)
        self.criterion = criterion

    def get_target_tensor(self, input: torch.FloatTensor, target_is_real: bool) -> torch.Tensor:
        """Gets the ground truth tensor for the discriminator, shaped like input."""
        filling_label = self.real_label if target_is_real else self.fake_label
        label_tensor = torch.tensor(1).fill_(filling_label).type(input.type())
        label_tensor.requires_grad_(False)
        return label_tensor.expand_as(input)

    def get_zero_tensor(self, input: torch.FloatTensor) -> torch.Tensor:
        """Gets a zero tensor shaped like input."""
        zero_label_tensor = torch.tensor(0).type(input[0].type())
        zero_label_tensor.requires_grad_(False)
        return zero_label_tensor.expand_as(input)

    def forward(self, input, target_is_real: bool, for_discriminator: bool):
        if type(input) is not list:
            input = [input]
        target_ = []
        for disc_out in input:
            if self.criterion != "hinge":
                target_.append(self.get_target_tensor(disc_out, target_is_real))
            else:
                target_.append(self.get_zero_tensor(disc_out))
        loss = []
        for disc_ind, disc_out in enumerate(input):
            disc_out = self.activation(disc_out)
            if self.criterion == "hinge":
                loss.append(-torch.mean(torch.min(disc_out - 1, self.get_zero_tensor(disc_out))))
            else:
                loss.append(self.loss_fct(disc_out, target_[disc_ind]))
        return torch.mean(torch.stack(loss))
