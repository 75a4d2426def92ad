"""
Checkpoint and state generation
"""
import torch


def restore_checkpoint(structure, state, restore_db=True):
    """
    :param structure: experiment structure object
    :param state: experiment state object
    :param restore_db: Attempt to restore database (true/false)

    :return: experiment structure
    """

    structure["training_modules"][0].load_state_dict(state["model"])
    structure["controller"].load_state_dict(state["controller"])

    if "database" in structure and restore_db:
        structure["database"] = structure["database"].attempt_reload()

    structure["metric_tracker"] = state["metric_tracker"]
    torch.random.set_rng_state(state["torch_rng_state"])

    return structure


def load_checkpoint_from_cwd(**kwargs):
    """
    Same as ``load_checkpoint``, but using default filenames.

    :param kwargs: passed to torch.load, i.e. use `map_location` to load the model
     on a specific device
    """
    with open("experiment_structure.pt", "rb") as pfile:
        structure = torch.load(pfile, **kwargs)

    with open("experiment_state.pt", "rb") as pfile:
        state = torch.load(pfile, **kwargs)

    return restore_checkpoint(structure, state, restore_db=True)
