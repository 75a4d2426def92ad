import torch
import torch.nn as nn

try:
    from torch_points import knn
except (ModuleNotFoundError, ImportError):
    from torch_points_kernels import knn


class SharedMLP(nn.Module):
    def __init__(self, in_channels, out_channels, bn=False, activation_fn=None):
        super(SharedMLP, self).__init__()
        self.conv = nn.Conv2d(in_channels, out_channels, 1)
        self.batch_norm = nn.BatchNorm2d(out_channels, eps=1e-6, momentum=0.99) if bn else None
        self.activation_fn = activation_fn

    def forward(self, input):
        x = self.conv(input)
        if self.batch_norm:
            x = self.batch_norm(x)
        if self.activation_fn:
            x = self.activation_fn(x)
        return x


class LocalSpatialEncoding(nn.Module):
    def __init__(self, d, num_neighbors, device):
        super(LocalSpatialEncoding, self).__init__()
        self.num_neighbors = num_neighbors
        self.mlp = SharedMLP(10, d, bn=True, activation_fn=nn.ReLU())
        self.device = device

    def forward(self, coords, features, knn_output):
        idx, dist = knn_output
        B, N, K = idx.size()
        expanded_idx = idx.unsqueeze(1).expand(B, 3, N, K)
        expanded_coords = coords.transpose(-2, -1).unsqueeze(-1).expand(B, 3, N, K)
        neighbor_coords = torch.gather(expanded_coords, 2, expanded_idx)

        expanded_idx = idx.unsqueeze(1).expand(B, features.size(1), N, K).to(self.device)
        expanded_features = features.expand(B, -1, N, K)
        neighbor_features = torch.gather(expanded_features, 2, expanded_idx)

        concat = torch.cat((
            expanded_coords,
            neighbor_coords,
            expanded_coords - neighbor_coords,
            dist.unsqueeze(-3)
        ), dim=-3).to(self.device)
        return torch.cat((
            self.mlp(concat),
            neighbor_features
        ), dim=-3)


class LocalFeatureAggregation(nn.Module):
    def __init__(self, d_in, d_out, num_neighbors, device):
        super(LocalFeatureAggregation, self).__init__()
        self.num_neighbors = num_neighbors
        self.mlp1 = SharedMLP(d_in, d_out // 2, activation_fn=nn.LeakyReLU(0.2))
        self.mlp2 = SharedMLP(d_out, 2 * d_out)
        self.shortcut = SharedMLP(d_in, 2 * d_out, bn=True)
        self.lse1 = LocalSpatialEncoding(d_out // 2, num_neighbors, device)
        self.lrelu = nn.LeakyReLU()

    def forward(self, coords, features):
        knn_output = knn(coords.cpu().contiguous(), coords.cpu().contiguous(), self.num_neighbors)
        x = self.mlp1(features)
        x = self.lse1(coords, x, knn_output)
        return self.lrelu(self.mlp2(x.mean(-1, keepdim=True)) + self.shortcut(features))


class RandLANet(nn.Module):
    def __init__(self, d_in, num_classes, num_neighbors=16, device=torch.device('cpu')):
        super(RandLANet, self).__init__()
        self.fc_start = nn.Linear(d_in, 8)
        self.lfa = LocalFeatureAggregation(8, 16, num_neighbors, device)
        self.fc_end = nn.Linear(32, num_classes)
        self.device = device
        self = self.to(device)

    def forward(self, input):
        coords = input[..., :3].clone().cpu()
        x = self.fc_start(input).transpose(-2, -1).unsqueeze(-1)
        x = self.lfa(coords, x)
        return self.fc_end(x.squeeze(-1).transpose(-2, -1))
