import torch

from save_load import load_model


def main(batch):
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    model = load_model("logs/model_10000").to(device)
    model.eval()
    return model.predict(batch, threshold=0.5)
