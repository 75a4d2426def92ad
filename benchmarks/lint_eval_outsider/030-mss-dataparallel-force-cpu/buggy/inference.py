import argparse

import torch
import torch.nn as nn

from utils import get_model_from_config, run_folder


def proc_folder(args):
    parser = argparse.ArgumentParser()
    parser.add_argument("--model_type", type=str, default="mdx23c")
    parser.add_argument("--config_path", type=str, help="path to config file")
    parser.add_argument("--start_check_point", type=str, default="", help="Initial checkpoint to valid weights")
    parser.add_argument("--device_ids", nargs="+", type=int, default=0, help="list of gpu ids")
    parser.add_argument("--force_cpu", action="store_true", help="Force the use of CPU even if CUDA is available")
    args = parser.parse_args(args)

    device = "cpu"
    if args.force_cpu:
        device = "cpu"
    elif torch.cuda.is_available():
        print("CUDA is available, use --force_cpu to disable it.")
        device = f"cuda:{args.device_ids}" if type(args.device_ids) == int else f"cuda:{args.device_ids[0]}"
    elif torch.backends.mps.is_available():
        device = "mps"

    model, config = get_model_from_config(args.model_type, args.config_path)
    if args.start_check_point != "":
        state_dict = torch.load(args.start_check_point, map_location=device, weights_only=True)
        model.load_state_dict(state_dict)

    # in case multiple CUDA GPUs are used and --device_ids arg is passed
    if type(args.device_ids) != int:
        model = nn.DataParallel(model, device_ids=args.device_ids)

    model = model.to(device)
    run_folder(model, args, config, device, verbose=True)


if __name__ == "__main__":
    proc_folder(None)
