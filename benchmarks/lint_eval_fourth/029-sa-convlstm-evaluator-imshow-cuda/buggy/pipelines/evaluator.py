import os

import matplotlib.pyplot as plt
import torch
from torch import nn
from torch.utils.data import DataLoader

from core.constants import DEVICE


class Evaluator:
    def __init__(
        self,
        model: nn.Module,
        test_dataloader: DataLoader,
        save_dir_path: str,
    ):
        self.model = model
        self.test_dataloader = test_dataloader
        os.makedirs(save_dir_path, exist_ok=True)
        self.save_dir_path = save_dir_path

    def run(self):
        with torch.no_grad():
            for batch_idx, (input, label) in enumerate(self.test_dataloader):
                input, label = input.to(DEVICE), label.to(DEVICE)
                pred_frames = self.model(input)
                self.visualize_predlabel_frames(batch_idx, label, pred_frames)

    def visualize_predlabel_frames(
        self, batch_idx: int, label_frames: torch.Tensor, pred_frames: torch.Tensor
    ):
        """
        frames: (BatchSize=1, Channels, Frames, H, W)
        """
        num_frames = label_frames.size(2)
        fig = plt.figure(figsize=(16, 6))
        subfigs = fig.subfigures(nrows=2, ncols=1)
        for rowidx, subfig in enumerate(subfigs):
            title = "prediction" if rowidx == 1 else "label"
            subfig.suptitle(title)
            axs = subfig.subplots(1, num_frames)
            frame_data = pred_frames if rowidx == 1 else label_frames
            for fidx in range(num_frames):
                ax = axs[fidx]
                with torch.no_grad():
                    ax.imshow(frame_data[0, 0, fidx], cmap="gray")
                ax.set_xlabel(f"frame{fidx}")
                ax.set(xticklabels=[], yticklabels=[], xticks=[], yticks=[])

        plt.savefig(os.path.join(self.save_dir_path, f"test-case{batch_idx}.png"))
