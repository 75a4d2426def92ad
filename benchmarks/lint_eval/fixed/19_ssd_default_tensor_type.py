# Reduced from https://github.com/amdegroot/ssd.pytorch/issues/578
# Scenario 12; the default rule that should find it: DK012 (fixed twin: no finding expected)
import torch
import torch.utils.data as data

if torch.cuda.is_available():
    torch.set_default_tensor_type("torch.cuda.FloatTensor")


def train(dataset, args):
    data_loader = data.DataLoader(dataset, args.batch_size, num_workers=args.num_workers,
                                  shuffle=True, collate_fn=detection_collate, pin_memory=True,
                                  generator=torch.Generator(device="cuda"))
    batch_iterator = iter(data_loader)
    return next(batch_iterator)
