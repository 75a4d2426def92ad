# Reduced from https://github.com/JDAI-CV/fast-reid/pull/509
# Scenario 10; the default rule that should find it: DK010 (buggy twin)
import torch
import torch.nn.functional as F


def compute_distmat(query_feat, gallery_feat):
    query_feat = F.normalize(query_feat.cuda(), dim=1)
    gallery_feat = F.normalize(gallery_feat.cuda(), dim=1)
    distmat = 1 - torch.mm(query_feat, gallery_feat.t())
    distmat = distmat.numpy()
    return distmat
