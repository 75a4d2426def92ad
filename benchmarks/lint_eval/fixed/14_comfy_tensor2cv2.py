# Reduced from https://github.com/chflame163/ComfyUI_FaceSimilarity/issues/10
# Scenario 10; the default rule that should find it: DK010 (fixed twin: no finding expected)
import numpy as np


def tensor2cv2(image):
    npimage = image.cpu().numpy()
    return (npimage * 255).astype(np.uint8)
