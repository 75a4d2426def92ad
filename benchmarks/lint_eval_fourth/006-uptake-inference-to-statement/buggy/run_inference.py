from argparse import ArgumentParser

import pandas as pd
import torch
from scipy.special import softmax
from transformers import BertTokenizer

from utils import BertInputBuilder, MultiHeadModel, clean_str


def get_prediction(model, instance, device):
    instance["attention_mask"] = [[1] * len(instance["input_ids"])]
    for key in ["input_ids", "token_type_ids", "attention_mask"]:
        instance[key] = torch.tensor(instance[key]).unsqueeze(0)  # Batch size = 1
        instance[key].to(device)

    output = model(input_ids=instance["input_ids"],
                   attention_mask=instance["attention_mask"],
                   token_type_ids=instance["token_type_ids"],
                   return_pooler_output=False)
    return output


def get_uptake_score(utterances, speakerA, speakerB, model, device, input_builder, max_length):
    textA = clean_str(utterances[speakerA])
    textB = clean_str(utterances[speakerB])
    instance = input_builder.build_inputs([textA], textB, max_length=max_length, input_str=True)
    output = get_prediction(model, instance, device)
    uptake_score = softmax(output["nsp_logits"][0].tolist())[1]
    return uptake_score


def main():
    parser = ArgumentParser()
    parser.add_argument("--data_file", type=str, default="")
    parser.add_argument("--speakerA", type=str, default="speakerA")
    parser.add_argument("--speakerB", type=str, default="speakerB")
    parser.add_argument("--model_checkpoint", type=str, default="checkpoints/uptake")
    parser.add_argument("--output", type=str, default="")
    parser.add_argument("--max_length", type=int, default=120)
    args = parser.parse_args()

    device = "cuda" if torch.cuda.is_available() else "cpu"
    tokenizer = BertTokenizer.from_pretrained("bert-base-uncased")
    input_builder = BertInputBuilder(tokenizer=tokenizer)
    uptake_model = MultiHeadModel.from_pretrained(args.model_checkpoint, head2size={"nsp": 2})
    uptake_model.to(device)

    utterances = pd.read_csv(args.data_file)
    uptake_model.eval()
    uptake_scores = []
    with torch.no_grad():
        for i, utt in utterances.iterrows():
            uptake_scores.append(get_uptake_score(utterances=utt,
                                                  speakerA=args.speakerA,
                                                  speakerB=args.speakerB,
                                                  model=uptake_model,
                                                  device=device,
                                                  input_builder=input_builder,
                                                  max_length=args.max_length))
    utterances["uptake_predictions"] = uptake_scores
    utterances.to_csv(args.output, index=False)


if __name__ == "__main__":
    main()
