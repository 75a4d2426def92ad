import torch
import torch.optim as optim
from torch.utils.data import DataLoader

import option
from dataset import Dataset
from model import Model
from train import train

if __name__ == "__main__":
    args = option.parser.parse_args()
    train_nloader = DataLoader(
        Dataset(args, test_mode=False, is_normal=True),
        batch_size=args.batch_size,
        shuffle=True,
        num_workers=0,
        pin_memory=False,
        drop_last=True,
    )
    train_aloader = DataLoader(
        Dataset(args, test_mode=False, is_normal=False),
        batch_size=args.batch_size,
        shuffle=True,
        num_workers=0,
        pin_memory=False,
        drop_last=True,
    )

    model = Model(args.feature_size, args.batch_size)
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    model = model.to(device)
    optimizer = optim.Adam(model.parameters(), lr=0.001, weight_decay=0.005)

    for step in range(1, args.max_epoch + 1):
        if (step - 1) % len(train_nloader) == 0:
            loadern_iter = iter(train_nloader)
        if (step - 1) % len(train_aloader) == 0:
            loadera_iter = iter(train_aloader)
        train(loadern_iter, loadera_iter, model, args.batch_size, optimizer, device)
