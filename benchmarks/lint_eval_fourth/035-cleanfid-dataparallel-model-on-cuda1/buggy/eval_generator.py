import torch

from cleanfid.features import build_feature_extractor


def generator_features(gen, num_gen=50_000, batch_size=128, z_dim=512):
    device = torch.device("cuda:1")
    feat_model = build_feature_extractor("clean", device)
    feats = []
    for _ in range(num_gen // batch_size):
        z = torch.randn((batch_size, z_dim), device=device)
        img_batch = gen(z)
        feats.append(feat_model(img_batch).detach().cpu())
    return torch.cat(feats)
