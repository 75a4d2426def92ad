"""Continue an interrupted training run (the shape of the documented restart example)."""
import torch

from hippynn.experiment.routines import SetupParams, setup_training, train_model
from hippynn.experiment.serialization import load_checkpoint_from_cwd

structure = load_checkpoint_from_cwd(map_location="cpu")
training_modules = structure["training_modules"]
database = structure["database"]
controller = structure["controller"]
metric_tracker = structure["metric_tracker"]

setup_params = SetupParams(device=torch.device("cuda"), controller=controller)
training_modules, controller, _ = setup_training(training_modules, setup_params)

train_model(training_modules, database, controller, metric_tracker)
