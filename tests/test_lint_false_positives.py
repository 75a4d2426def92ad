"""The false positives issue 43 found on real code, each reduced to a snippet that must stay silent, next
to its twin that must still be reported: DK008 on a file the function saved above and in CPU-only tests,
DK001 telling a user to move the `lengths` that `pack_padded_sequence` wants on the CPU, and DK003 on a
tensor made on the CPU that never meets the module's data."""

from __future__ import annotations

import textwrap

import pytest

from devicekit.lint import DEFAULT_CODES, lint_source


def found(source: str, path: str = "train.py") -> list[tuple[int, str]]:
    return [(f.line, f.code) for f in lint_source(textwrap.dedent(source), path=path, codes=DEFAULT_CODES)]


# --- DK008 ------------------------------------------------------------------------------------------

SAVED_ABOVE = {
    "same path": """
        def roundtrip(model, path):
            torch.save(model.state_dict(), path)
            state = torch.load(path)
    """,
    "a buffer": """
        def roundtrip(x):
            buffer = io.BytesIO()
            torch.save(x, buffer)
            buffer.seek(0)
            return torch.load(buffer)
    """,
    "a file of the folder saved to": """
        def check(fabric, state, tmp_path):
            fabric.save(tmp_path, state)
            meta = torch.load(tmp_path / "meta.pt")
            other = torch.load(os.path.join(tmp_path, "x.pt"))
    """,
    "a path built once, as a string": """
        def check(sd, tmp_path):
            fn = str(tmp_path / "test.pt")
            with incremental_save(fn) as f:
                f.save(sd)
            return torch.load(fn)
    """,
    "a script's top level": """
        torch.save(resnet, "model.ckpt")
        model = torch.load("model.ckpt")
    """,
    "a converter writes the folder": """
        def evaluate(checkpoint_dir, out_dir):
            convert_lit_checkpoint(checkpoint_dir=checkpoint_dir, output_dir=out_dir)
            state_dict = torch.load(out_dir / "model.pth")
    """,
    "saved from the CPU elsewhere in the file": """
        def dump(args, head):
            torch.save(head.cpu(), os.path.join(args.dump_dir, "head.pth"))

        def main(args):
            head = torch.load(os.path.join(args.load_dir, "head.pth"))
    """,
    "data a preparation script saved, a scheduler's numbers": """
        def main(args, data_dir, scheduler):
            features = torch.load(cached_features_file)
            train_data = torch.load(data_dir / "train.pt")
            scheduler.load_state_dict(torch.load(os.path.join(args.model_name_or_path, "scheduler.pt")))
    """,
}

STILL_REPORTED = {
    "another path": """
        def roundtrip(model, path, other):
            torch.save(model.state_dict(), path)
            state = torch.load(other)
    """,
    "saved after the load": """
        def resume(model, path):
            state = torch.load(path)
            torch.save(model.state_dict(), path)
    """,
    "saved in another function": """
        def save(model, path):
            torch.save(model.state_dict(), path)

        def load(path):
            return torch.load(path)
    """,
    "saved from the GPU elsewhere in the file": """
        def dump(args, head):
            torch.save(head, os.path.join(args.dump_dir, "head.pth"))

        def main(args):
            head = torch.load(os.path.join(args.load_dir, "head.pth"))
    """,
    "an optimizer's state": """
        def resume(args, optimizer):
            optimizer.load_state_dict(torch.load(os.path.join(args.model_name_or_path, "optimizer.pt")))
    """,
}


@pytest.mark.parametrize("name", list(SAVED_ABOVE))
def test_dk008_silent_on_a_file_saved_above(name):
    assert found(SAVED_ABOVE[name]) == []


@pytest.mark.parametrize("name", list(STILL_REPORTED))
def test_dk008_still_reported(name):
    assert [code for _, code in found(STILL_REPORTED[name])] == ["DK008"]


CPU_TEST = textwrap.dedent(
    """
    def test_converted(tmp_path):
        prepare(tmp_path)
        converted = torch.load(tmp_path / "converted" / "lit_model.pth")
    """
)


@pytest.mark.parametrize("path", ["tests/test_convert.py", "pkg/tests/convert/helpers.py", "model_test.py"])
def test_dk008_silent_in_tests_that_never_touch_an_accelerator(path):
    assert found(CPU_TEST, path=path) == []
    helper = CPU_TEST.replace("def test_converted", "def load_converted")
    assert found(helper, path=path) == []  # the whole file never names an accelerator
    # a test that needs a GPU runs where there is one: it loads what it saved there
    assert found("@RunIf(min_cuda_gpus=1)\n" + CPU_TEST, path=path) == []
    # in a file that names CUDA somewhere, a helper that is not a test is judged as anywhere else
    assert found(helper + '\nDEVICE = "cuda"\n', path=path) == [(4, "DK008")]


def test_dk008_in_a_test_function_of_another_file():
    assert found(CPU_TEST, path="train.py") == []
    gpu_test = CPU_TEST.replace("prepare(tmp_path)", "prepare(tmp_path, device='cuda')")
    assert found(gpu_test, path="train.py") == []
    # not a test: reported
    assert found(CPU_TEST.replace("def test_converted", "def converted"), path="train.py") == [(4, "DK008")]


# --- DK001 and sequence lengths ---------------------------------------------------------------------

CAPTIONS = """
    encoder = EncoderCNN(256).to(device)
    decoder = DecoderRNN(256, 512).to(device)
    for i, (images, captions, lengths) in enumerate(data_loader):
        images = images.to(device)
        features = encoder(images)
        outputs = decoder(features, captions, lengths)
"""


def test_dk001_leaves_lengths_on_the_cpu():
    """`captions` was never moved (reported); `lengths` must stay on the CPU (not reported)."""
    findings = lint_source(textwrap.dedent(CAPTIONS), codes=DEFAULT_CODES)
    assert [(f.line, f.col, f.code) for f in findings] == [(7, 33, "DK001")]
    fixed = CAPTIONS.replace(
        "images = images.to(device)", "images, captions = images.to(device), captions.to(device)"
    )
    assert found(fixed) == []
    batch = """
        model = Net().to(device)
        for batch in loader:
            out = model(batch["tokens"].to(device), batch["lengths"])
    """
    assert found(batch) == []


# --- DK003: made on the CPU, but does it meet the module's data? ------------------------------------

NEVER_MEETS = {
    "crop sizes turned into slice bounds": """
        class MultiCropWrapper(nn.Module):
            def forward(self, x):
                idx_crops = torch.cumsum(torch.unique_consecutive(
                    torch.tensor([inp.shape[-1] for inp in x]), return_counts=True)[1], 0)
                start_idx, output = 0, torch.empty(0).to(x[0].device)
                for end_idx in idx_crops:
                    _out = self.backbone(torch.cat(x[start_idx:end_idx]))
                    start_idx = end_idx
                return output
    """,
    "a test model returns a constant": """
        class DraftModel(nn.Module):
            def forward(self, **kwargs):
                return torch.tensor([1, 2, 3, 4, 5], dtype=torch.float)[None, None, ...]
    """,
    "an index of the input": """
        class Pick(nn.Module):
            def forward(self, x):
                idx = torch.arange(x.size(0))
                return x[idx, idx]
    """,
    "reduced to a 0-dim tensor": """
        class Scale(nn.Module):
            def forward(self, x):
                total = torch.ones(4).sum()
                return x * total
    """,
}

MEETS = {
    "added to the input": """
        class Noise(nn.Module):
            def forward(self, x):
                noise = torch.randn(x.shape)
                return x + noise
    """,
    "through a chain of CPU computations": """
        class PositionalEncoding(nn.Module):
            def forward(self, v):
                j = torch.arange(self.m)
                coeffs = 2 * np.pi * self.sigma ** (j / self.m)
                vp = coeffs * torch.unsqueeze(v, -1)
                return torch.cat((torch.cos(vp), torch.sin(vp)), dim=-1)
    """,
    "a target for the loss": """
        class NPairs(pl.LightningModule):
            def training_step(self, batch, batch_idx):
                predict = self(batch["x1"], batch["x2"])
                target = torch.arange(predict.size(0))
                return self.loss_fn(predict, target)
    """,
    "concatenated with a submodule's output": """
        class Head(nn.Module):
            def forward(self, x):
                h = self.proj(x)
                pad = torch.zeros(h.size(0), 1)
                return torch.cat([h, pad], dim=1)
    """,
}


@pytest.mark.parametrize("name", list(NEVER_MEETS))
def test_dk003_silent_when_the_cpu_tensor_never_meets_the_module_data(name):
    assert found(NEVER_MEETS[name]) == []


@pytest.mark.parametrize("name", list(MEETS))
def test_dk003_reported_where_it_meets(name):
    assert {code for _, code in found(MEETS[name])} == {"DK003"}


# --- false positives of the first run on held-out code bases, each reduced ---------------------------

HELD_OUT = {
    "a module's forward called from a method run while it is built (vit-pytorch cct)": """
        class Tokenizer(nn.Module):
            def __init__(self):
                super().__init__()
                self.conv_layers = nn.Sequential(nn.Conv2d(3, 8, 3))

            def sequence_length(self, n_channels=3, height=224, width=224):
                return self.forward(torch.zeros((1, n_channels, height, width))).shape[1]

            def forward(self, x):
                return self.conv_layers(x)
    """,
    "self.device is the module's own device (x-transformers)": """
        class Wrapper(nn.Module):
            def __init__(self, n):
                super().__init__()
                self.register_buffer("data", torch.zeros(n))
                self.register_buffer("step", torch.tensor(0))

            def sample(self, size):
                idx = torch.randperm(self.data.shape[0], device=self.device)[:size]
                return self.data[idx]
    """,
    "a device variable the function set and the analysis lost (x-transformers)": """
        def rollout(x, lens=None):
            device = x.device
            if lens is not None:
                n, device = other.shape[1], other.device
            if lens is None:
                lens = torch.full((x.shape[0],), x.shape[1], device=device)
            return x[lens > 0]
    """,
    "a model moved to the CPU on request, fed tensors made where it is (open_clip profiler)": """
        def profile(model, size, force_cpu=False):
            if force_cpu:
                model = model.to("cpu")
            device = next(model.parameters()).device
            example = torch.ones(size, device=device)
            model(example)
    """,
    "a file a helper created above (open_clip tests)": """
        def run(input_dir):
            path = os.path.join(input_dir, "random_text.pt")
            if not os.path.exists(path):
                create_random_text_data(path, batches=1)
            data = torch.load(path, weights_only=True)
    """,
    "a model returned by a training function, moved in place (DALLE notebook)": """
        vae = DiscreteVAE(image_size=32).to(device)
        vae, loss_history = fit(vae, opt, images)
        vae.cpu()
    """,
}


@pytest.mark.parametrize("name", list(HELD_OUT))
def test_held_out_false_positives_stay_silent(name):
    assert found(HELD_OUT[name]) == []


def test_held_out_true_findings_still_reported():
    """The same shapes with the bug in them: a CPU tensor into a module's forward, the table on the CPU."""
    forward_on_cpu_data = """
        class Net(nn.Module):
            def __init__(self):
                super().__init__()
                self.conv = nn.Conv2d(3, 8, 3)

            def forward(self, x):
                return self.conv(x + torch.zeros(x.shape))
    """
    assert [code for _, code in found(forward_on_cpu_data)] == ["DK003"]
    table_on_cpu = """
        class Wrapper(nn.Module):
            def __init__(self, n):
                super().__init__()
                self.data = torch.zeros(n)
                self.register_buffer("step", torch.tensor(0))

            def forward(self, size):
                idx = torch.randperm(self.data.shape[0], device="cuda")[:size]
                return self.data[idx]
    """
    assert "DK011" in [code for _, code in found(table_on_cpu)]


# --- false positives of a second held-out run (accelerate, deep-text-recognition, YOLOv3, ...) -----

HELD_OUT_2 = {
    "a whole batch moved in place (a tokenizer's BatchEncoding)": """
        model = Net().to(device)
        for step, batch in enumerate(train_dataloader):
            batch.to(accelerator.device)
            outputs = model(**batch)
    """,
    "DDP given device_ids scatters its inputs": """
        class Net(nn.Module):
            pass
        def train(rank, device):
            model = DDP(Net().to(device), device_ids=[rank])
            for batch in DataLoader(ds):
                outputs = model(batch)
    """,
    "a DataLoader set up by code not read (accelerator.prepare)": """
        def train(model, device):
            model.to(device)
            model_, optimizer, train_dataloader = get_training_utilities("bert")
            for batch in train_dataloader:
                outputs = model(**batch)
    """,
    "a model placed as it is built (device_map)": """
        def main(state, batches):
            model = VitsModel.from_pretrained("facebook/mms-tts", device_map=state.device)
            for batch in batches:
                model(input_ids=batch["input_ids"].to(state.device))
    """,
    "a part of a model given to code that may move it (a hook)": """
        class ModelForTest(nn.Module):
            def __init__(self):
                super().__init__()
                self.linear1 = nn.Linear(3, 4)

        def test_hooks(device):
            model = ModelForTest()
            add_hook_to_module(model.linear1, AlignDevicesHook(execution_device=0))
            x = torch.randn(2, 3).to(device)
            output = model(x)
    """,
    "a project function that sets a hook on the model": """
        class ModelForTest(nn.Module):
            pass

        def add_hook(module, hook):
            module._hf_hook = hook

        def check(device):
            model = ModelForTest()
            add_hook(model, CpuOffload(execution_device=device))
            output = model(torch.randn(2, 3).to(device))
    """,
    "an error raised on purpose": """
        class Net(nn.Module):
            def __init__(self):
                super().__init__()
                self.fc = nn.Linear(3, 4)

        def test_mismatch(device):
            model = Net().to(device)
            with pytest.raises(RuntimeError):
                model(torch.randn(2, 3))
    """,
    "CTC lengths stay on the CPU": """
        def step(model, image, text, length, device):
            criterion = torch.nn.CTCLoss(zero_infinity=True).to(device)
            preds = model.to(device)(image.to(device))
            preds_size = torch.IntTensor([preds.size(1)] * image.size(0))
            return criterion(preds, text, preds_size, length)
    """,
    "one of two losses, CTC or not": """
        def step(model, opt, image, text, length, device):
            if "CTC" in opt:
                criterion = torch.nn.CTCLoss().to(device)
            else:
                criterion = torch.nn.CrossEntropyLoss().to(device)
            preds = model.to(device)(image.to(device))
            preds_size = torch.IntTensor([preds.size(1)] * image.size(0))
            return criterion(preds, text, preds_size, length)
    """,
    "lengths for pack_padded_sequence made on the CPU": """
        class RNN(nn.Module):
            def __init__(self):
                super().__init__()
                self.rnn = nn.LSTM(4, 4)

            def forward(self, ids, length):
                return self.rnn(nn.utils.rnn.pack_padded_sequence(ids, length))

        model = RNN().to("cuda")
        ids = torch.zeros(3, 1, 4, device="cuda")
        length_tensor = torch.LongTensor([3])
        out = model(ids, length_tensor)
    """,
    "a list wrapped in nn.Sequential right after (DK005)": """
        class GRCL(nn.Module):
            def __init__(self, n):
                super().__init__()
                self.GRCL = [nn.Conv2d(8, 8, 3) for _ in range(n)]
                self.GRCL = nn.Sequential(*self.GRCL)
    """,
    "a helper that moves detections back to the CPU (YOLOv3)": """
        def detect_image(model, image):
            input_img = transforms.Compose([DEFAULT_TRANSFORMS])((image, np.zeros((1, 5))))[0].unsqueeze(0)
            if torch.cuda.is_available():
                input_img = input_img.to("cuda")
            detections = model(input_img)
            detections = non_max_suppression(detections, 0.5, 0.5)
            return detections.numpy()
    """,
}


@pytest.mark.parametrize("name", list(HELD_OUT_2))
def test_second_held_out_false_positives_stay_silent(name):
    assert found(HELD_OUT_2[name]) == []


def test_second_held_out_bugs_still_reported():
    """The same shapes with the bug: a tensor of the batch, not the batch; a loss that is not CTC; a model
    that nothing moves."""
    assert [c for _, c in found("for x, y in loader:\n    x.to(device)\n")] == ["DK002"]
    not_ctc = HELD_OUT_2["CTC lengths stay on the CPU"].replace("CTCLoss(zero_infinity=True)", "MSELoss()")
    assert [c for _, c in found(not_ctc)] == ["DK003"]
    never_moved = """
        class ModelForTest(nn.Module):
            pass

        def check(device):
            model = ModelForTest()
            output = model(torch.randn(2, 3).to(device))
    """
    assert [c for _, c in found(never_moved)] == ["DK201"]


# --- false positives of a third held-out run (captum, lit-llama, microsoft/LoRA, sam2, stylegan2, ...) ---

HELD_OUT_3 = {
    "DDP around a model moved elsewhere is no move (DK009)": """
        def train(args, model):
            optimizer = torch.optim.AdamW(model.parameters())
            path = os.path.join(args.model_name_or_path, "optimizer.pt")
            optimizer.load_state_dict(torch.load(path, map_location="cpu"))
            model = torch.nn.parallel.DistributedDataParallel(model, device_ids=[args.local_rank])
    """,
    "a static method's int parameters are no data (DK003)": """
        class SinusoidalPositionalEmbedding(nn.Embedding):
            def forward(self, input_ids):
                weights = self.get_embedding(input_ids.size(1), self.embedding_dim, self.padding_idx)
                return weights.to(input_ids.device)[input_ids]

            @staticmethod
            def get_embedding(num_embeddings, embedding_dim, padding_idx):
                half_dim = embedding_dim // 2
                emb = math.log(10000) / (half_dim - 1)
                emb = torch.exp(torch.arange(half_dim, dtype=torch.float) * -emb)
                return emb
    """,
    "a list of stages that are registered too (DK005)": """
        class ResNet(nn.Module):
            def __init__(self, stages):
                super().__init__()
                self.stages_and_names = []
                for i, blocks in enumerate(stages):
                    stage = nn.Sequential(*blocks)
                    name = "res" + str(i + 2)
                    self.add_module(name, stage)
                    self.stages_and_names.append((stage, name))
    """,
    "the device of a tensor the analysis lost is no guess (DK001)": """
        def check(loader, samples):
            for x, y in loader:
                hessian = torch.matmul(samples.T, samples) * 2
                hessian = hessian + torch.eye(len(hessian)).to(device=hessian.device) * 1e-4
                score = torch.matmul(x, hessian)
    """,
    "a context given a device builds there (DK201)": """
        class LLaMA(nn.Module):
            pass

        def test_model(config):
            with EmptyInitOnDevice(device="cuda", dtype=torch.bfloat16):
                model = LLaMA(config)
            out = model(torch.randint(0, 10, (3, 4)).cuda())
    """,
    "a project class that picks its device as it is built (DK201)": """
        class PerceptualLoss(nn.Module):
            def __init__(self, use_gpu=True):
                super().__init__()
                self.net = nn.Linear(3, 3)
                if use_gpu:
                    self.net = self.net.cuda()

        percept = PerceptualLoss(use_gpu=True)
        image = torch.zeros(2, 3).to("cuda")
        dist = percept(image)
    """,
}


@pytest.mark.parametrize("name", list(HELD_OUT_3))
def test_third_held_out_false_positives_stay_silent(name):
    assert found(HELD_OUT_3[name]) == []


def test_third_held_out_bugs_still_reported():
    """A CPU table indexed with a CUDA mask (true on the Object-Detection tutorial) and a model that
    nothing puts on the device stay reported."""
    mask_index = """
        def calculate(true_class_images, this_image, device):
            true_class_images = true_class_images.to(device)
            ind = torch.LongTensor(range(true_class_images.size(0)))[true_class_images == this_image]
    """
    [(_, code)] = found(mask_index)
    assert code == "DK011"
    plain = HELD_OUT_3["a context given a device builds there (DK201)"].replace(
        'with EmptyInitOnDevice(device="cuda", dtype=torch.bfloat16):\n                model',
        "if True:\n                model",
    )
    assert [c for _, c in found(plain)] == ["DK201"]


# --- false positives of a fourth held-out run (dinov2, BLIP, taming-transformers, ImageBind, ...) ---

HELD_OUT_4 = {
    "numpy() only on the CPU path (DK010)": """
        class LogRegModule(nn.Module):
            def fit(self, train_features):
                train_features = train_features.to(dtype=self.dtype, device=self.device)
                if self.device == _CPU_DEVICE:
                    train_features = train_features.numpy()
                if self.device == "cpu":
                    arr = train_features.numpy()
    """,
    "a wrapper built around a model that is already placed (DK201)": """
        def run(model, train_dataset):
            feature_model = ModelWithIntermediateLayers(model, 4)
            sample_output = feature_model(train_dataset[0][0].unsqueeze(0).cuda())
    """,
}


@pytest.mark.parametrize("name", list(HELD_OUT_4))
def test_fourth_held_out_false_positives_stay_silent(name):
    assert found(HELD_OUT_4[name]) == []


def test_fourth_held_out_bugs_still_reported():
    """numpy() outside the CPU test, and a model built from a size, not from a module, stay reported."""
    outside = (
        HELD_OUT_4["numpy() only on the CPU path (DK010)"]
        .replace('if self.device == "cpu":\n                arr', "if True:\n                arr")
        .replace("device=self.device", 'device="cuda"')
    )
    assert "DK010" in [c for _, c in found(outside)]
    from_a_size = """
        def run(dim, train_dataset):
            feature_model = ModelWithIntermediateLayers(dim, 4)
            sample_output = feature_model(train_dataset[0][0].unsqueeze(0).cuda())
    """
    assert [c for _, c in found(from_a_size)] == ["DK201"]


def test_a_model_built_with_a_device_argument_is_not_never_moved():
    """yolov5's classify/val.py (found on the code bases of issue 43): `DetectMultiBackend(weights,
    device=device)` places itself."""
    source = """
        def run(weights, device, dataloader):
            model = DetectMultiBackend(weights, device=device)
            for images, labels in dataloader:
                images = images.to(device)
                y = model(images)
    """
    assert found(source) == []
    assert [c for _, c in found(source.replace("weights, device=device", "weights"))] == ["DK201"]
