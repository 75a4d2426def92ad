"""Reduced from https://github.com/ztxz16/fastllm/issues/231 (tools/baichuan2flm.py and torch2flm.py).

The conversion script leaves the model on the GPU; torch2flm.tofile walks its state_dict and calls
dict[key].numpy() on each weight.
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
            cur = dict[key].numpy().astype(ori_np_data_type)
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
