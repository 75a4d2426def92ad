"""
TODO: Enable users to specify custom embedding maps (reduced: the MPS forward path)
"""
import torch
import torch.nn as nn

from contractables import ContractableList, EdgeVec
from modules import InputRegion


class MPS(nn.Module):
    """
    Matrix product state which converts input into a single output vector
    """
    def __init__(self, input_dim, output_dim, bond_dim, feature_dim=2, periodic_bc=False,
                 parallel_eval=False):
        super().__init__()
        self.input_dim = input_dim
        self.output_dim = output_dim
        self.feature_dim = feature_dim
        self.feature_map = None
        module_list = [InputRegion(input_dim, bond_dim=bond_dim, d=feature_dim)]
        self.linear_region = LinearRegion(module_list=module_list, periodic_bc=periodic_bc,
                                          parallel_eval=parallel_eval)

    def forward(self, input_data):
        """
        Embed our data and pass it to an MPS with a single output site
        """
        input_data = self.embed_input(input_data)
        output = self.linear_region(input_data)
        return output

    def embed_input(self, input_data):
        """
        Embed pixels of input_data into separate local feature spaces
        """
        assert len(input_data.shape) in [2, 3]
        assert input_data.size(1) == self.input_dim

        if len(input_data.shape) == 3:
            return input_data

        embedded_shape = list(input_data.shape) + [self.feature_dim]

        if self.feature_dim != 2:
            raise RuntimeError(f"self.feature_dim = {self.feature_dim}, "
                  "but default feature_map requires self.feature_dim = 2")
        embedded_data = torch.empty(embedded_shape)

        embedded_data[:,:,0] = input_data
        embedded_data[:,:,1] = 1 - input_data

        return embedded_data


class LinearRegion(nn.Module):
    """
    List of modules which feeds input to each module and returns reduced output
    """
    def __init__(self, module_list, periodic_bc=False, parallel_eval=False):
        super().__init__()
        # Wrap as a ModuleList for proper parameter registration
        self.module_list = nn.ModuleList(module_list)
        self.periodic_bc = periodic_bc
        self.parallel_eval = parallel_eval

    def forward(self, input_data):
        """
        Contract input with list of MPS cores and return result as contractable
        """
        assert len(input_data.shape) == 3
        lin_bonds = ['l', 'r']

        ind = 0
        contractable_list = []
        for module in self.module_list:
            mod_len = len(module)
            mod_input = input_data[:, ind:(ind+mod_len)]
            ind += mod_len
            contractable_list.append(module(mod_input))

        # For open boundary conditions, add dummy edge vectors to
        # contractable_list and reduce everything to get our output
        end_items = [contractable_list[i]for i in [0, -1]]
        bond_strs = [item.bond_str for item in end_items]
        bond_inds = [bs.index(c) for (bs, c) in zip(bond_strs, lin_bonds)]
        bond_dims = [item.tensor.size(ind) for (item, ind) in
                                           zip(end_items, bond_inds)]

        # Build dummy end vectors and insert them at the ends of our list
        end_vecs = [torch.zeros(dim) for dim in bond_dims]
        for vec in end_vecs:
            vec[0] = 1
        contractable_list.insert(0, EdgeVec(end_vecs[0], is_left_vec=True))
        contractable_list.append(EdgeVec(end_vecs[1], is_left_vec=False))

        # Multiply together everything in contractable_list
        contractable_list = ContractableList(contractable_list)
        output = contractable_list.reduce(parallel_eval=self.parallel_eval)

        return output.tensor
