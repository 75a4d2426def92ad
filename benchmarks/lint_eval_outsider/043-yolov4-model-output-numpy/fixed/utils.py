import time

import numpy as np
import torch
from PIL import Image

from .region import get_region_boxes1, nms


def do_detect(model, img, conf_thresh, nms_thresh, use_cuda=True):
    model.eval()
    t0 = time.time()
    if isinstance(img, Image.Image):
        width, height = img.width, img.height
        img = torch.ByteTensor(torch.ByteStorage.from_buffer(img.tobytes()))
        img = img.view(height, width, 3).transpose(0, 1).transpose(0, 2).contiguous()
        img = img.view(1, 3, height, width).float().div(255.0)
    elif type(img) == np.ndarray:  # cv2 image
        img = torch.from_numpy(img.transpose(2, 0, 1)).float().div(255.0).unsqueeze(0)

    if use_cuda:
        img = img.cuda()
    img = torch.autograd.Variable(img)

    list_boxes = model(img)

    anchors = [12, 16, 19, 36, 40, 28, 36, 75, 76, 55, 72, 146, 142, 110, 192, 243, 459, 401]
    anchor_masks = [[0, 1, 2], [3, 4, 5], [6, 7, 8]]
    strides = [8, 16, 32]
    anchor_step = len(anchors) // 9
    boxes = []
    for i in range(3):
        masked_anchors = []
        for m in anchor_masks[i]:
            masked_anchors += anchors[m * anchor_step : (m + 1) * anchor_step]
        masked_anchors = [anchor / strides[i] for anchor in masked_anchors]
        if use_cuda:
            boxes.append(get_region_boxes1(list_boxes[i].cpu().data.numpy(), 0.6, 80, masked_anchors, len(anchor_masks[i])))
        else:
            boxes.append(get_region_boxes1(list_boxes[i].data.numpy(), 0.6, 80, masked_anchors, len(anchor_masks[i])))

    boxes = boxes[0][0] + boxes[1][0] + boxes[2][0]
    print("detect time: %f" % (time.time() - t0))
    return nms(boxes, nms_thresh)
