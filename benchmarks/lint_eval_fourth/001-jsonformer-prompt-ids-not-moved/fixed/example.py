from transformers import AutoModelForCausalLM, AutoTokenizer

from jsonformer.main import Jsonformer

tokenizer = AutoTokenizer.from_pretrained("StabilityAI/stablelm-base-alpha-7b")
model = AutoModelForCausalLM.from_pretrained("StabilityAI/stablelm-base-alpha-7b")
model.half().cuda()

json_schema = {"type": "object", "properties": {"age": {"type": "number"}, "is_student": {"type": "boolean"}}}
prompt = "Generate a person's information based on the following schema:"
jsonformer = Jsonformer(model, tokenizer, json_schema, prompt)
age = jsonformer.generate_number()
