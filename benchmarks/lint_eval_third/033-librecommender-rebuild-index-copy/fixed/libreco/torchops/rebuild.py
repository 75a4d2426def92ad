"""Rebuild PyTorch models (reduced: user and item embeddings)."""
import torch

from ..utils.save_load import load_torch_state_dict


@torch.no_grad()
def rebuild_torch_model(self, path, model_name):
    """Assign the saved model variables to the newly initialized model.

    This method is used before retraining the new model, in order to avoid training
    from scratch every time we get some new data.
    """
    from ..training import get_trainer

    self.model_built = True
    self.build_model()
    self.trainer = get_trainer(self)

    model_state_dict, optimizer_state_dict = load_torch_state_dict(
        path, model_name, self.device
    )
    user_params, item_params = dict(), dict()
    # remove user and item parameters from state_dict and assign later
    for name in list(model_state_dict.keys()):
        if "user" in name and "embed" in name:
            user_params[name] = model_state_dict.pop(name)
        elif "item" in name and "embed" in name:
            item_params[name] = model_state_dict.pop(name)

    # `strict=False` ignores non-matching keys
    self.torch_model.load_state_dict(model_state_dict, strict=False)

    for name, param in self.torch_model.named_parameters():
        if name in user_params:
            index = torch.arange(self.data_info.old_n_users, device=self.device)
            param.index_copy_(0, index, user_params[name])
        elif name in item_params:
            index = torch.arange(self.data_info.old_n_items, device=self.device)
            param.index_copy_(0, index, item_params[name])
