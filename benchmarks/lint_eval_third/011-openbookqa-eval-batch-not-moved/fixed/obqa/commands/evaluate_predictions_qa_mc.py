from typing import Dict, Any, Iterable
import argparse
import logging

from allennlp.common import Tqdm
from allennlp.common.util import prepare_environment
from allennlp.data.dataset_readers.dataset_reader import DatasetReader
from allennlp.data import Instance
from allennlp.data.iterators import DataIterator
from allennlp.models.archival import load_archive
from allennlp.models.model import Model
from allennlp.nn.util import move_to_device ## for making cuda compatible input tensors

logger = logging.getLogger(__name__)  # pylint: disable=invalid-name


def evaluate(model: Model,
             instances: Iterable[Instance],
             data_iterator: DataIterator,
             cuda_device: int) -> Dict[str, Any]:
    model.eval()

    iterator = data_iterator(instances, num_epochs=1)
    logger.info("Iterating over dataset")
    generator_tqdm = Tqdm.tqdm(iterator, total=data_iterator.get_num_batches(instances))
    for batch in generator_tqdm:
        ## made cuda compatible (if needed)
        batch = move_to_device(batch, cuda_device)

        model(**batch)
        metrics = model.get_metrics()
        description = ', '.join(["%s: %.2f" % (name, value) for name, value in metrics.items()]) + " ||"
        generator_tqdm.set_description(description)

    return model.get_metrics(reset=True)


def evaluate_from_args(args: argparse.Namespace) -> Dict[str, Any]:
    archive = load_archive(args.archive_file, args.cuda_device, args.overrides)
    config = archive.config
    prepare_environment(config)
    model = archive.model
    model.eval()

    dataset_reader = DatasetReader.from_params(config.pop('dataset_reader'))

    iterator = DataIterator.from_params(config.pop("iterator"))
    iterator.index_with(model.vocab)

    logger.info("Reading evaluation data from %s", args.evaluation_data_file)
    dataset = dataset_reader.read(args.evaluation_data_file)

    metrics = evaluate(model, dataset, iterator, args.cuda_device)

    logger.info("Finished evaluating.")
    for key, metric in metrics.items():
        logger.info("%s: %s", key, metric)
    return metrics


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description='Evaluate the specified model + dataset')
    parser.add_argument('--archive_file', type=str, required=True)
    parser.add_argument('--evaluation_data_file', type=str, required=True)
    parser.add_argument('--cuda_device', type=int, default=-1, help='id of GPU to use (if any)')
    parser.add_argument('-o', '--overrides', type=str, default="")
    evaluate_from_args(parser.parse_args())
