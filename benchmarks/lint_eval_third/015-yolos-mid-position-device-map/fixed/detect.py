"""Object detection with YOLOS spread over the visible GPUs (device_map="auto")."""
import torch
from PIL import Image
from transformers import AutoImageProcessor, AutoModelForObjectDetection

image_processor = AutoImageProcessor.from_pretrained("hustvl/yolos-base")
model = AutoModelForObjectDetection.from_pretrained("hustvl/yolos-base", device_map="auto")

image = Image.open("000000039769.jpg")
inputs = image_processor(images=image, return_tensors="pt").to(model.device)
with torch.no_grad():
    outputs = model(**inputs)
target_sizes = torch.tensor([image.size[::-1]])
results = image_processor.post_process_object_detection(outputs, threshold=0.9, target_sizes=target_sizes)[0]
for score, label, box in zip(results["scores"], results["labels"], results["boxes"]):
    print(model.config.id2label[label.item()], round(score.item(), 3), [round(i, 2) for i in box.tolist()])
