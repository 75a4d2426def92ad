import torch

from src.utils import Encoder


def evaluate(model, coco_loader, dboxes):
    model.eval()
    model.cuda()
    encoder = Encoder(dboxes)
    results = []
    for img, img_id, img_size, _, _ in coco_loader:
        with torch.no_grad():
            ploc, plabel = model(img.cuda())
            for idx in range(ploc.shape[0]):
                loc, label, prob = encoder.decode_batch(ploc[idx:idx + 1], plabel[idx:idx + 1], 0.50, 200)[0]
                results.append((img_id[idx], loc.cpu(), label.cpu(), prob.cpu()))
    return results
