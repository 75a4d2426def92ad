import torch

import torch_sim as ts
from torch_sim.constraints import FixCom

device = torch.device("cuda")
state = ts.initialize_state(ts.io.read_atoms("si.xyz"), device=device, dtype=torch.float64)
constraint = FixCom(system_idx=torch.tensor([0], device=device))
new_positions = state.positions + 0.01 * torch.randn_like(state.positions)
constraint.adjust_positions(state, new_positions)
