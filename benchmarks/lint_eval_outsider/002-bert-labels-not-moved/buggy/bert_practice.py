import pandas as pd
import torch
import torch.nn as nn
from torch.utils.data import DataLoader, Dataset
from transformers import AdamW, BertConfig, BertForSequenceClassification, BertTokenizer

num_labels = 2
batch_size = 16
device = torch.device("cuda:0" if torch.cuda.is_available() else "cpu")


class SentimentDataset(Dataset):
    def __init__(self, path_to_file):
        self.dataset = pd.read_csv(path_to_file, sep="\t", names=["text", "label"])

    def __len__(self):
        return len(self.dataset)

    def __getitem__(self, idx):
        return {"text": self.dataset.loc[idx, "text"], "label": self.dataset.loc[idx, "label"]}


sentiment_train_set = SentimentDataset("sentiment/sentiment.train.data")
sentiment_train_loader = DataLoader(sentiment_train_set, batch_size=batch_size, shuffle=True)
tokenizer = BertTokenizer("sentiment/vocab.txt")

config = BertConfig.from_pretrained("bert-base-uncased", num_labels=num_labels)
model = BertForSequenceClassification.from_pretrained("bert-base-uncased", config=config)
model.to(device)
optimizer = AdamW(model.parameters(), lr=1e-5)
criterion = nn.CrossEntropyLoss()


def train(model, dataloader, optimizer, criterion, device):
    model.train()
    epoch_loss = 0
    for i, batch in enumerate(dataloader):
        label = batch["label"]
        text = batch["text"]
        tokenized_text = tokenizer(text, max_length=100, truncation=True, padding=True, return_tensors="pt")
        tokenized_text = tokenized_text.to(device)
        optimizer.zero_grad()
        output = model(**tokenized_text, labels=label)
        y_pred_prob = output[1]
        loss = criterion(y_pred_prob.view(-1, 2), label.view(-1))
        loss.backward()
        optimizer.step()
        epoch_loss += loss.item()
    return epoch_loss / len(dataloader)


for epoch in range(2):
    train_loss = train(model, sentiment_train_loader, optimizer, criterion, device)
    print("train loss:", train_loss)
