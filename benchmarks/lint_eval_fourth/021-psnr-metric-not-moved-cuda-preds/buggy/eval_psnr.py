import torch
from torchmetrics import PeakSignalNoiseRatio

preds = torch.rand([3, 128, 128], generator=torch.manual_seed(42))
target = preds * 0.75
preds = preds.cuda()
target = target.cuda()

psnr_loss = PeakSignalNoiseRatio()
avg_psnr = psnr_loss(preds, target)
print(avg_psnr)
