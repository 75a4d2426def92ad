"""Fixed twin of bug.py (https://github.com/ztxz16/fastllm/issues/231): the answer's change,
dict[key].cpu().numpy().
"""

import os
import struct
import tempfile

import numpy as np
import torch
import torch.nn as nn


def tofile(exportPath, model, dtype="float16"):
    dict = model.state_dict()
    ori_np_data_type = np.float16 if dtype == "float16" else np.float32
    with open(exportPath, "wb") as fo:
        fo.write(struct.pack("i", len(dict)))
        for key in dict:
            cur = dict[key].cpu().numpy().astype(ori_np_data_type)
            fo.write(struct.pack("i", len(key)))
            fo.write(key.encode())
            fo.write(struct.pack("i", len(cur.shape)))
            for axis in cur.shape:
                fo.write(struct.pack("i", axis))
            fo.write(cur.data)


if __name__ == "__main__":
    torch.manual_seed(0)
    model = nn.Sequential(nn.Embedding(100, 16), nn.Linear(16, 16), nn.Linear(16, 100))
    if torch.cuda.is_available():
        model = model.cuda()
    model = model.eval()
    exportPath = os.path.join(tempfile.mkdtemp(), "baichuan-13b-fp16.flm")
    tofile(exportPath, model, dtype="float16")
    print("exported", os.path.getsize(exportPath), "bytes")
