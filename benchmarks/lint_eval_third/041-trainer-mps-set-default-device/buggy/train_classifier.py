"""The report's script shape: a global MPS default device, then transformers' Trainer."""
import torch
from transformers import AutoModelForSequenceClassification, Trainer, TrainingArguments

model_name = "distilbert-base-uncased"
label_map = {"negative": 0, "neutral": 1, "positive": 2}

mps_device = torch.device("mps")
torch.set_default_device(mps_device)
model = AutoModelForSequenceClassification.from_pretrained(
      model_name,
      num_labels=len(label_map)
)
model.to(mps_device)


def train(train_dataset, eval_dataset):
    # Set up training arguments
    training_args = TrainingArguments(
        output_dir='./results',
        num_train_epochs=3,
        per_device_train_batch_size=16,
        evaluation_strategy="epoch",
    )
    trainer = Trainer(model=model, args=training_args,
                      train_dataset=train_dataset, eval_dataset=eval_dataset)
    trainer.train()
