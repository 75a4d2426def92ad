# Reduced from https://github.com/Hzzone/pytorch-openpose/pull/16
# Scenario 10; the default rule that should find it: DK010 (buggy twin)
import torch


class Hand(object):
    def __init__(self, model_path):
        self.model = handpose_model()
        if torch.cuda.is_available():
            self.model = self.model.cuda()
        self.model.load_state_dict(torch.load(model_path, map_location="cpu"))
        self.model.eval()

    def __call__(self, image):
        data = torch.from_numpy(image).float()
        if torch.cuda.is_available():
            data = data.cuda()
        with torch.no_grad():
            output = self.model(data).numpy()
        return output
