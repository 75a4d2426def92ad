import torch
from transformers import AutoModelForCausalLM, AutoModelForSeq2SeqLM


def load_model(model_args):
    torch_dtype = getattr(torch, model_args.torch_dtype)
    AutoModelLoad = AutoModelForSeq2SeqLM if model_args.encoder_decoder_type else AutoModelForCausalLM
    if model_args.multi_gpu_one_model:
        return AutoModelLoad.from_pretrained(model_args.model_name_or_path, device_map="auto", torch_dtype=torch_dtype)
    return AutoModelLoad.from_pretrained(model_args.model_name_or_path, torch_dtype=torch_dtype)
