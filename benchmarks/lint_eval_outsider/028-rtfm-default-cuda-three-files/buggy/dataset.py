import numpy as np
import torch
import torch.utils.data as data

torch.set_default_tensor_type("torch.cuda.FloatTensor")


class Dataset(data.Dataset):
    def __init__(self, args, is_normal=True, test_mode=False):
        self.is_normal = is_normal
        self.test_mode = test_mode
        self.rgb_list_file = args.test_rgb_list if test_mode else args.rgb_list
        self.list = list(open(self.rgb_list_file))

    def __getitem__(self, index):
        features = np.load(self.list[index].strip("\n"), allow_pickle=True)
        label = torch.tensor(0.0) if self.is_normal else torch.tensor(1.0)
        return np.array(features, dtype=np.float32), label

    def __len__(self):
        return len(self.list)
