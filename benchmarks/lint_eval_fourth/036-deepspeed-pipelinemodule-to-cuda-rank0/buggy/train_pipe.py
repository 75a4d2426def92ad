import deepspeed
import torch.nn as nn

from deepspeed.pipe import LayerSpec, PipelineModule


def main(args, trainset):
    deepspeed.init_distributed(dist_backend='nccl')
    layers = [LayerSpec(nn.Linear, 1024, 1024) for _ in range(8)]
    net = PipelineModule(layers=layers, num_stages=2, loss_fn=nn.CrossEntropyLoss())
    engine, _, _, _ = deepspeed.initialize(args=args, model=net, model_parameters=net.parameters(), training_data=trainset)
    for step in range(args.steps):
        engine.train_batch()
