import numpy as np
import torch
from torch import tensor

from madminer.utils.ml.models.ratio import DoublyParameterizedRatioEstimator, ParameterizedRatioEstimator


def evaluate_ratio_model(
    model,
    method_type=None,
    theta0s=None,
    theta1s=None,
    xs=None,
    run_on_gpu=True,
    double_precision=False,
):
    # CPU or GPU?
    run_on_gpu = run_on_gpu and torch.cuda.is_available()
    device = torch.device("cuda" if run_on_gpu else "cpu")
    dtype = torch.double if double_precision else torch.float

    # Figure out method type
    if method_type is None:
        if isinstance(model, ParameterizedRatioEstimator):
            method_type = "parameterized"
        elif isinstance(model, DoublyParameterizedRatioEstimator):
            method_type = "doubly_parameterized"
        else:
            raise RuntimeError("Cannot infer method type automatically")

    # Balance theta0 and theta1
    if theta1s is None:
        n_thetas = len(theta0s)
    else:
        n_thetas = max(len(theta0s), len(theta1s))

    # Prepare data
    n_xs = len(xs)
    theta0s = torch.stack([tensor(theta0s[i % n_thetas]) for i in range(n_xs)])
    if theta1s is not None:
        theta1s = torch.stack([tensor(theta1s[i % n_thetas]) for i in range(n_xs)])
    xs = torch.stack([tensor(i) for i in xs])

    model = model.to(device, dtype)
    theta0s = theta0s.to(device, dtype)
    if theta1s is not None:
        theta1s = theta1s.to(device, dtype)
    xs = xs.to(device, dtype)

    # Evaluate ratio estimator without score:
    with torch.no_grad():
        model.eval()

        if method_type == "parameterized":
            s_hat, log_r_hat, _ = model(theta0s, xs, track_score=False, create_gradient_graph=False)
        elif method_type == "doubly_parameterized":
            s_hat, log_r_hat, _, _ = model(theta0s, theta1s, xs, track_score=False, create_gradient_graph=False)
        else:
            raise ValueError("Unknown method type %s", method_type)

        # Get data and return
        s_hat = s_hat.detach().numpy().flatten()
        log_r_hat = log_r_hat.detach().numpy().flatten()

    return s_hat, log_r_hat
