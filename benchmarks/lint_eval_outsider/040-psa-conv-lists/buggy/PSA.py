import torch
from torch import nn


class PSA(nn.Module):
    def __init__(self, channel=512, reduction=4, S=4):
        super().__init__()
        self.S = S

        self.convs = []
        for i in range(S):
            self.convs.append(nn.Conv2d(channel // S, channel // S, kernel_size=2 * (i + 1) + 1, padding=i + 1))

        self.se_blocks = []
        for i in range(S):
            self.se_blocks.append(
                nn.Sequential(
                    nn.AdaptiveAvgPool2d(1),
                    nn.Conv2d(channel // S, channel // (S * reduction), kernel_size=1, bias=False),
                    nn.ReLU(inplace=True),
                    nn.Conv2d(channel // (S * reduction), channel // S, kernel_size=1, bias=False),
                    nn.Sigmoid(),
                )
            )
        self.softmax = nn.Softmax(dim=1)

    def forward(self, x):
        b, c, h, w = x.size()
        # Step1: SPC module
        SPC_out = x.view(b, self.S, c // self.S, h, w)  # bs,s,ci,h,w
        for idx, conv in enumerate(self.convs):
            SPC_out[:, idx, :, :, :] = conv(SPC_out[:, idx, :, :, :])
        # Step2: SE weight
        se_out = []
        for idx, se in enumerate(self.se_blocks):
            se_out.append(se(SPC_out[:, idx, :, :, :]))
        SE_out = torch.stack(se_out, dim=1).expand_as(SPC_out)
        # Step3: Softmax, Step4: SPA
        PSA_out = SPC_out * self.softmax(SE_out)
        return PSA_out.view(b, -1, h, w)


if __name__ == "__main__":
    input = torch.randn(50, 512, 7, 7).cuda()
    psa = PSA(channel=512, reduction=8).cuda()
    output = psa(input)
