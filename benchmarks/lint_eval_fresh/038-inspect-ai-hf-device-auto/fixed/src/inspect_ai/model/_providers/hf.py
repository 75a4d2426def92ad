import functools
from dataclasses import dataclass
from typing import Any

import torch
from transformers import AutoModelForCausalLM, AutoTokenizer


@dataclass
class GenerateInput:
    input: str
    device: str
    tokenizer: Any
    generator: Any
    decoder: Any
    batch_size: int


class HuggingFaceAPI:
    def __init__(self, model_name: str, **model_args: Any):
        def collect_model_arg(name: str) -> Any | None:
            nonlocal model_args
            value = model_args.get(name, None)
            if value:
                model_args.pop(name)
            return value

        device = collect_model_arg("device")
        self.batch_size = collect_model_arg("batch_size")

        # device
        if device:
            self.device = device
        elif torch.backends.mps.is_available():
            self.device = "mps"
        elif torch.cuda.is_available():
            self.device = "cuda:0"
        else:
            self.device = "cpu"

        # model
        self.model = AutoModelForCausalLM.from_pretrained(
            model_name, device_map=self.device, **model_args
        )
        self.tokenizer = AutoTokenizer.from_pretrained(model_name)
        self.tokenizer.pad_token = self.tokenizer.eos_token
        self.tokenizer.padding_side = "left"

    def generate(self, chat: str, max_tokens: int = 256) -> str:
        tokenizer = functools.partial(self.tokenizer, return_tensors="pt", padding=True)
        generator = functools.partial(self.model.generate, do_sample=True, max_new_tokens=max_tokens)
        decoder = functools.partial(self.tokenizer.batch_decode, skip_special_tokens=True)
        return generate_batch(
            [
                GenerateInput(
                    input=chat,
                    device=self.model.device,
                    tokenizer=tokenizer,
                    generator=generator,
                    decoder=decoder,
                    batch_size=self.batch_size or 1,
                )
            ]
        )[0]


def generate_batch(inputs: list[GenerateInput]) -> list[str]:
    first_input = inputs[0]
    device = first_input.device
    tokenizer = first_input.tokenizer
    generator = first_input.generator
    decoder = first_input.decoder

    # tokenize and move to device
    tokenized_inputs = tokenizer([item.input for item in inputs])
    input_ids = tokenized_inputs["input_ids"]
    attention_mask = tokenized_inputs["attention_mask"]
    input_ids = input_ids.to(device)
    attention_mask = attention_mask.to(device)

    with torch.inference_mode():
        generate_ids = generator(input_ids=input_ids, attention_mask=attention_mask)
    return decoder(generate_ids[:, input_ids.size(dim=1):])
