from pathlib import Path

from hyrax.pytorch_ignite import create_trainer, dist_data_loader


def run(config, model, dataset, results_dir: Path):
    """Train a model with the configured dataset."""
    train_shuffle = bool(config["train"]["shuffle"])
    train_data_loader, _ = dist_data_loader(dataset["train"], config, False, train_shuffle)

    # Create trainer, a pytorch-ignite `Engine` object
    trainer = create_trainer(model, config, results_dir)
    trainer.run(train_data_loader, max_epochs=config["train"]["epochs"])
    return model
