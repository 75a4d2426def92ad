# Reduced from https://github.com/pytorch/pytorch/issues/122757
# Scenario 7; the default rule that should find it: DK007 (buggy twin)
import torch

model = Classifier().cuda()
weights = torch.randn(5)
loss_fn = torch.nn.CrossEntropyLoss(weight=weights)
model_output = model(inputs.cuda())
loss = loss_fn(input=model_output, target=labels.cuda())
