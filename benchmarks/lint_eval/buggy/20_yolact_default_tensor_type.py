# Reduced from https://github.com/dbolya/yolact/issues/664
# Scenario 12; the default rule that should find it: DK012 (buggy twin)
import torch
import torch.utils.data as data

torch.set_default_tensor_type("torch.cuda.FloatTensor")

data_loader = data.DataLoader(dataset, args.batch_size, num_workers=args.num_workers,
                              shuffle=True, collate_fn=detection_collate, pin_memory=True)
