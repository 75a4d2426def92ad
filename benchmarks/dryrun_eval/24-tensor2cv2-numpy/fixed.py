"""Fixed twin of bug.py (https://github.com/chflame163/ComfyUI_FaceSimilarity/issues/10): the missing
.cpu() that the issue names.
"""

import numpy as np
import torch


def tensor2cv2(image: torch.Tensor) -> np.ndarray:
    if image.dim() == 4:
        image = image.squeeze()
    npimage = image.cpu().numpy()
    cv2image = np.uint8(npimage * 255 / npimage.max())
    return cv2image[:, :, ::-1].copy()


def face_similarity(image_a, image_b):
    a = tensor2cv2(image_a).astype(np.float32).ravel()
    b = tensor2cv2(image_b).astype(np.float32).ravel()
    return float(np.dot(a, b) / (np.linalg.norm(a) * np.linalg.norm(b)))


if __name__ == "__main__":
    torch.manual_seed(0)
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    upscaled = torch.nn.functional.interpolate(torch.rand(1, 3, 8, 8).to(device), scale_factor=2)
    image_a = upscaled.permute(0, 2, 3, 1)
    image_b = torch.rand(1, 16, 16, 3).to(device)
    print("similarity", face_similarity(image_a, image_b))
