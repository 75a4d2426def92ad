"""The Trainer documentation's class-weight example, used as the docs show it."""
import torch
from torch import nn
from transformers import AutoModelForSequenceClassification, Trainer, TrainingArguments


class CustomTrainer(Trainer):
    def compute_loss(self, model, inputs, return_outputs=False):
        labels = inputs.get("labels")
        # forward pass
        outputs = model(**inputs)
        logits = outputs.get("logits")
        # compute custom loss (suppose one has 3 labels with different weights)
        loss_fct = nn.CrossEntropyLoss(weight=torch.tensor([1.0, 2.0, 3.0], device=model.device))
        loss = loss_fct(logits.view(-1, self.model.config.num_labels), labels.view(-1))
        return (loss, outputs) if return_outputs else loss


def main(train_dataset, eval_dataset):
    model = AutoModelForSequenceClassification.from_pretrained("bert-base-cased", num_labels=3)
    args = TrainingArguments(output_dir="out", per_device_train_batch_size=16, num_train_epochs=3)
    trainer = CustomTrainer(model=model, args=args, train_dataset=train_dataset, eval_dataset=eval_dataset)
    trainer.train()
