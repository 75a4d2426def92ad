import torch
from transformers import WhisperForConditionalGeneration, WhisperProcessor


def train_step(batch, model, optimizer):
    input_features = batch["input_features"].to("cuda:0")
    labels = batch["labels"].to("cuda:0")
    outputs = model(input_features=input_features, labels=labels, return_dict=True)
    outputs.loss.backward()
    optimizer.step()
    optimizer.zero_grad()


processor = WhisperProcessor.from_pretrained("openai/whisper-large-v2")
model = WhisperForConditionalGeneration.from_pretrained("openai/whisper-large-v2", device_map="auto")
optimizer = torch.optim.AdamW(model.parameters(), lr=1e-5)
