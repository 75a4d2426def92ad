"""
Routines for setting up and performing training
"""
import torch

from .metric_tracker import MetricTracker
from .controllers import Controller
from .assembly import TrainingModules
from .. import tools


class SetupParams:
    def __init__(self, device=None, controller=None, optimizer=None, learning_rate=None):
        self.device = device
        self.controller = controller
        self.optimizer = optimizer
        self.learning_rate = learning_rate


def setup_training(training_modules, setup_params):
    """
    Prepares training_modules for training according to setup_params.

    * sets devices for training modules
    * if no controller given, instantiates and links optimizer to the learnable params on the model
    """
    model, loss, evaluator = training_modules

    controller = setup_params.controller
    if not isinstance(controller, Controller):
        params = filter(lambda p: p.requires_grad, model.parameters())
        optimizer = setup_params.optimizer(params, lr=setup_params.learning_rate)
        controller = Controller(optimizer=optimizer)

    optimizer = controller.optimizer
    model, evaluator, optimizer = set_devices(
        model, loss, evaluator, optimizer, setup_params.device or tools.device_fallback()
    )
    training_modules = TrainingModules(model, loss, evaluator)

    metrics = MetricTracker(evaluator.loss_names, stopping_key=controller.stopping_key)

    return training_modules, controller, metrics


def set_devices(model, loss, evaluator, optimizer, device):
    """
    Sets the model, loss, and optimizer to the specified device if necessary.
    Evaluation loss is performed on CPU.
    """
    print("Using device: ", device)
    if isinstance(device, (tuple, list)):
        model = torch.nn.DataParallel(model, device_ids=device)
        device = torch.device(device[0])
    device = torch.device(device)

    model.to(device)
    loss.to(device)
    evaluator.loss.cpu()
    evaluator.model_device = device
    evaluator.model = model
    # reload the state dict after model transfer
    optimizer.load_state_dict(optimizer.state_dict())

    return model, evaluator, optimizer


def train_model(training_modules, database, controller, metric_tracker):
    model, loss, evaluator = training_modules
    device = evaluator.model_device
    optimizer = controller.optimizer
    for epoch in range(controller.max_epochs):
        model.train()
        for batch in database.make_generator("train", "train", controller.batch_size):
            batch = [item.to(device=device, non_blocking=True) for item in batch]
            batch_inputs = batch[: len(model.input_nodes)]
            batch_targets = batch[-len(loss.input_nodes):]
            batch_model_outputs = model(*batch_inputs)
            batch_train_loss = loss(*batch_model_outputs, *batch_targets)[0]
            optimizer.zero_grad(set_to_none=True)
            batch_train_loss.backward()
            optimizer.step()
        controller.push_epoch(epoch, evaluator.evaluate(database))
    return metric_tracker
