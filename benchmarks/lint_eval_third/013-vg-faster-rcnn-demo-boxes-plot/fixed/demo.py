import argparse
import os

import cv2
import matplotlib.pyplot as plt
import numpy as np
import torch
from imageio import imread

from model.faster_rcnn.resnet import resnet
from model.rpn.bbox_transform import bbox_transform_inv, clip_boxes
from model.utils.config import cfg
from model.utils.blob import _get_image_blob

MIN_BOXES = 10
MAX_BOXES = 100


def parse_args():
    parser = argparse.ArgumentParser(description='Test a Fast R-CNN network')
    parser.add_argument('--load_dir', default="models")
    parser.add_argument('--image_dir', default="images")
    parser.add_argument('--image_file', default="img1.jpg")
    parser.add_argument('--classes_dir', default="data/genome/1600-400-20")
    parser.add_argument('--cuda', dest='cuda', action='store_true')
    return parser.parse_args()


if __name__ == '__main__':
  args = parse_args()
  classes = ['__background__']
  with open(os.path.join(args.classes_dir, 'objects_vocab.txt')) as f:
      for object in f.readlines():
          classes.append(object.split(',')[0].lower().strip())

  fasterRCNN = resnet(classes, 101, pretrained=False, class_agnostic=False)
  fasterRCNN.create_architecture()
  load_name = os.path.join(args.load_dir, 'faster_rcnn_res101_vg.pth')
  checkpoint = torch.load(load_name, map_location=(lambda storage, loc: storage))
  fasterRCNN.load_state_dict(checkpoint['model'])

  im_data = torch.FloatTensor(1)
  im_info = torch.FloatTensor(1)
  num_boxes = torch.LongTensor(1)
  gt_boxes = torch.FloatTensor(1)
  if args.cuda > 0:
      im_data = im_data.cuda()
      im_info = im_info.cuda()
      num_boxes = num_boxes.cuda()
      gt_boxes = gt_boxes.cuda()
  if args.cuda > 0:
    fasterRCNN.cuda()
  fasterRCNN.eval()

  conf_thresh = 0.4
  im_in = np.array(imread(os.path.join(args.image_dir, args.image_file)))
  im = im_in[:,:,::-1]
  blobs, im_scales = _get_image_blob(im)
  im_info_np = np.array([[blobs.shape[1], blobs.shape[2], im_scales[0]]], dtype=np.float32)
  im_data_pt = torch.from_numpy(blobs).permute(0, 3, 1, 2)
  im_info_pt = torch.from_numpy(im_info_np)
  with torch.no_grad():
          im_data.resize_(im_data_pt.size()).copy_(im_data_pt)
          im_info.resize_(im_info_pt.size()).copy_(im_info_pt)
          gt_boxes.resize_(1, 1, 5).zero_()
          num_boxes.resize_(1).zero_()
  rois, cls_prob, bbox_pred, _, _, _, _, _ = fasterRCNN(im_data, im_info, gt_boxes, num_boxes)

  scores = cls_prob.data
  boxes = rois.data[:, :, 1:5]
  box_deltas = bbox_pred.data.view(1, -1, 4 * len(classes))
  pred_boxes = bbox_transform_inv(boxes, box_deltas, 1)
  pred_boxes = clip_boxes(pred_boxes, im_info.data, 1)
  pred_boxes /= im_scales[0]
  scores = scores.squeeze()
  pred_boxes = pred_boxes.squeeze()

  max_conf, _ = scores[:, 1:].max(dim=1)
  if args.cuda > 0:
      keep_boxes = torch.where(max_conf >= conf_thresh, max_conf, torch.tensor(0.0).cuda())
  else:
      keep_boxes = torch.where(max_conf >= conf_thresh, max_conf, torch.tensor(0.0))
  keep_boxes = torch.squeeze(torch.nonzero(keep_boxes))
  if len(keep_boxes) < MIN_BOXES:
      keep_boxes = torch.argsort(max_conf, descending = True)[:MIN_BOXES]
  elif len(keep_boxes) > MAX_BOXES:
      keep_boxes = torch.argsort(max_conf, descending = True)[:MAX_BOXES]

  im = cv2.cvtColor(im, cv2.COLOR_BGR2RGB)
  plt.imshow(im)

  boxes = pred_boxes[keep_boxes].cpu()
  objects = torch.argmax(scores[keep_boxes][:,1:], dim=1)

  for i in range(len(keep_boxes)):
      kind = objects[i]+1
      bbox = boxes[i, kind * 4: (kind + 1) * 4]
      if bbox[0] == 0:
          bbox[0] = 1
      if bbox[1] == 0:
          bbox[1] = 1
      cls = classes[objects[i]+1]
      plt.gca().add_patch(
          plt.Rectangle((bbox[0], bbox[1]),
                        bbox[2] - bbox[0],
                        bbox[3] - bbox[1], fill=False,
                        edgecolor='red', linewidth=2, alpha=0.5)
              )
      plt.gca().text(bbox[0], bbox[1] - 2,
                  '%s' % (cls),
                  bbox=dict(facecolor='blue', alpha=0.5),
                  fontsize=10, color='white')
  plt.show()
  print ('boxes=%d' % (len(keep_boxes)))
