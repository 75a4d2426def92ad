# Reduced from https://github.com/yunjey/pytorch-tutorial/issues/249
# Scenario 8; the default rule that should find it: DK008 (fixed twin: no finding expected)
import torch

device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
encoder = EncoderCNN(256).eval().to(device)
encoder.load_state_dict(torch.load("models/encoder-5-3000.pkl", map_location=device))
