from transformers import AutoModelForCausalLM, AutoTokenizer

MAX_NEW_TOKENS = 128
model_name = "facebook/opt-2.7b"
text = "Hello my name is"

tokenizer = AutoTokenizer.from_pretrained(model_name)
input_ids = tokenizer(text, return_tensors="pt").input_ids

model = AutoModelForCausalLM.from_pretrained(model_name, device_map='auto')
generated_ids = model.generate(input_ids, max_length=MAX_NEW_TOKENS)
print(model.hf_device_map)
print(tokenizer.decode(generated_ids[0], skip_special_tokens=True))
