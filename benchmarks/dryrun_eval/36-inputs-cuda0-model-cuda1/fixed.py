"""Fixed twin of bug.py (https://github.com/thunlp/OpenPrompt/pull/161): the batch goes to the model's GPU,
which is what the pull request's change to InputFeatures.cuda is for.
"""

import torch
import torch.nn as nn


class InputFeatures(dict):
    def cuda(self, device=None):
        return InputFeatures({k: v.cuda(device) for k, v in self.items()})

    def to(self, device):
        return InputFeatures({k: v.to(device) for k, v in self.items()})


class PromptForClassification(nn.Module):
    def __init__(self, vocab_size=100, hidden=16, num_classes=2):
        super().__init__()
        self.embeddings = nn.Embedding(vocab_size, hidden)
        self.verbalizer = nn.Linear(hidden, num_classes)

    def forward(self, batch):
        inputs_embeds = self.embeddings(batch["input_ids"])
        mask = batch["attention_mask"].unsqueeze(-1).float()
        return self.verbalizer((inputs_embeds * mask).sum(1) / mask.sum(1))


if __name__ == "__main__":
    torch.manual_seed(0)
    use_cuda = torch.cuda.device_count() > 1
    prompt_model = PromptForClassification()
    if use_cuda:
        prompt_model = prompt_model.cuda(1)
    dataloader = [
        InputFeatures(input_ids=torch.randint(0, 100, (4, 8)), attention_mask=torch.ones(4, 8))
        for _ in range(2)
    ]
    prompt_model.eval()
    for step, inputs in enumerate(dataloader):
        if use_cuda:
            inputs = inputs.cuda(1)
        logits = prompt_model(inputs)
        print(step, torch.argmax(logits, dim=-1).tolist())
