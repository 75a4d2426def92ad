# Reduced from https://github.com/pytorch/pytorch/issues/122757
# Scenario 7; the default rule that should find it: DK007 (fixed twin: no finding expected)
import torch

model = Classifier().cuda()
weights = torch.randn(5)
loss_fn = torch.nn.CrossEntropyLoss(weight=weights).cuda()
model_output = model(inputs.cuda())
loss = loss_fn(input=model_output, target=labels.cuda())
