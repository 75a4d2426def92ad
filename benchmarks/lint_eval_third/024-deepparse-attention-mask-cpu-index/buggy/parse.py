"""Address parsing with the attention model on the GPU (the library's documented use)."""
from deepparse.parser import AddressParser

address_parser = AddressParser(model_type="bpemb", attention_mechanism=True, device=0)
parsed = address_parser("350 rue des Lilas Ouest Quebec city Quebec G1L 1B6")
print(parsed)
