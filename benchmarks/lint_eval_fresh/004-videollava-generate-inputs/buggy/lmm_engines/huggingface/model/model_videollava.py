import torch
import av
import numpy as np
from .model_adapter import BaseModelAdapter, register_model_adapter
from ...utils import decode_and_save_video
from transformers import TextIteratorStreamer, VideoLlavaProcessor, VideoLlavaForConditionalGeneration
from threading import Thread


def read_video_pyav(container, indices):
    frames = []
    container.seek(0)
    start_index = indices[0]
    end_index = indices[-1]
    for i, frame in enumerate(container.decode(video=0)):
        if i > end_index:
            break
        if i >= start_index and i in indices:
            frames.append(frame)
    return np.stack([x.to_ndarray(format="rgb24") for x in frames])


class VideoLLaVAAdapter(BaseModelAdapter):
    """The model adapter for LanguageBind/Video-LLaVA-7B"""

    def match(self, model_path: str):
        return "video-llava" in model_path.lower()

    def load_model(self, model_path: str, device: str, from_pretrained_kwargs: dict = ...):
        self.model = None
        if "torch_dtype" not in from_pretrained_kwargs:
            from_pretrained_kwargs["torch_dtype"] = torch.float16
        if not from_pretrained_kwargs.get("device_map"):
            from_pretrained_kwargs["device_map"] = "cuda"
        self.torch_dtype = from_pretrained_kwargs["torch_dtype"]
        self.model = VideoLlavaForConditionalGeneration.from_pretrained(model_path, **from_pretrained_kwargs)
        self.processor = VideoLlavaProcessor.from_pretrained(model_path)
        return self.model

    def generate(self, params:dict):
        video_path = decode_and_save_video(params["prompt"]["video"])
        prompt = params["prompt"]["text"]
        generation_kwargs = params.copy()
        generation_kwargs.pop("prompt")

        container = av.open(video_path)

        # sample uniformly 8 frames from the video
        total_frames = container.streams.video[0].frames
        indices = np.arange(0, total_frames, total_frames / 8).astype(int)
        clip = read_video_pyav(container, indices)

        final_prompt = f"USER: <video>{prompt} ASSISTANT:"
        inputs = self.processor(text=final_prompt, videos=clip, return_tensors="pt")

        # Generate
        generate_ids = self.model.generate(**inputs, **generation_kwargs)
        input_len = inputs["input_ids"].shape[1]
        generated_text = self.processor.batch_decode(generate_ids[:, input_len:], skip_special_tokens=True, clean_up_tokenization_spaces=False)[0]
        return {"text": generated_text}

    def generate_stream(self, params:dict):
        video_path = decode_and_save_video(params["prompt"]["video"])
        prompt = params["prompt"]["text"]
        generation_kwargs = params.copy()
        generation_kwargs.pop("prompt")
        # add streamer
        streamer = TextIteratorStreamer(self.processor, skip_prompt=True, skip_special_tokens=True)
        generation_kwargs["streamer"] = streamer

        container = av.open(video_path)
        total_frames = container.streams.video[0].frames
        indices = np.arange(0, total_frames, total_frames / 8).astype(int)
        clip = read_video_pyav(container, indices)

        final_prompt = f"USER: <video>{prompt} ASSISTANT:"
        inputs = self.processor(text=final_prompt, videos=clip, return_tensors="pt")
        inputs = {k: v.to(self.model.device) for k, v in inputs.items()}

        # Generate
        thread = Thread(target=self.model.generate, kwargs={**inputs, **generation_kwargs})
        thread.start()

        generated_text = ""
        for text in streamer:
            generated_text += text
            yield {"text": generated_text}


if __name__ == "__main__":
    from .unit_test import test_adapter
    model_path = "LanguageBind/Video-LLaVA-7B-hf"
    device = "cuda:0"
    model_adapter = VideoLLaVAAdapter()
    test_adapter(model_adapter, model_path, device, model_type="video")
