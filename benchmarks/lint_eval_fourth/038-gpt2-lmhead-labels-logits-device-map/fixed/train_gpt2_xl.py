import torch
from transformers import AutoModelForCausalLM, AutoTokenizer

tokenizer = AutoTokenizer.from_pretrained("gpt2-xl")
model = AutoModelForCausalLM.from_pretrained("gpt2-xl", device_map="auto")
optimizer = torch.optim.AdamW(model.parameters(), lr=2e-5)

for text in open("train.txt"):
    batch = tokenizer(text, return_tensors="pt").to("cuda:0")
    outputs = model(**batch, labels=batch["input_ids"], return_dict=True)
    outputs.loss.backward()
    optimizer.step()
    optimizer.zero_grad()
