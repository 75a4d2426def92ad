"""Round 4 of issue 43: inferences of the device-flow analysis that restore what the surface rules of
b31bf62 found on real code and round 3 lost (a differential run of both linters), and the general shapes
real bug reports take. Each inference has a found case and a silent twin."""

from __future__ import annotations

import textwrap

from devicekit.lint import DEFAULT_CODES, lint_source
from devicekit.lint.dataflow import places


def where(source: str, function: str | None = None) -> dict[str, str]:
    env = places(textwrap.dedent(source), function)
    return {name: f"{value.kind}@{value.place.kind}" for name, value in env.items()}


def findings(source: str) -> list[tuple[int, str]]:
    return [(f.line, f.code) for f in lint_source(textwrap.dedent(source), "train.py", DEFAULT_CODES)]


def messages(source: str, lang: str = "en") -> list[str]:
    return [f.message(lang) for f in lint_source(textwrap.dedent(source), "train.py", DEFAULT_CODES)]


# --- the path a machine with a GPU takes ----------------------------------------------------------------

GPU_TEST = """
    rnn = nn.Linear(5, 5)
    if torch.cuda.is_available():
        rnn.cuda()
    inputs = torch.zeros(1, 6, 5)
    {move}
    outputs = rnn(inputs)
    _, idx = outputs.max(1)
    {read}
    """


def test_a_model_moved_under_a_gpu_test_is_on_the_device_after_it():
    env = where(GPU_TEST.format(move="", read="pass"))
    assert env["rnn"] == "module@device"
    assert env["outputs"] == "tensor@device"


def test_numpy_of_the_output_of_a_model_moved_under_a_gpu_test_is_found():
    source = GPU_TEST.format(
        move="if torch.cuda.is_available():\n        inputs = inputs.cuda()", read="idx = idx.data.numpy()"
    )
    assert (10, "DK010") in findings(source)
    (text,) = [m for m in messages(source) if "numpy" in m]
    assert "when a GPU is there (the test at line 3)" in text
    (text_zh,) = [m for m in messages(source, "zh") if "numpy" in m]
    assert "有 GPU 时，见第 3 行的判断" in text_zh


def test_numpy_after_cpu_under_the_same_test_is_silent():
    source = GPU_TEST.format(
        move="if torch.cuda.is_available():\n        inputs = inputs.cuda()",
        read="idx = idx.cpu().numpy()",
    )
    assert findings(source) == []


def test_numpy_in_the_else_of_the_same_test_is_silent():
    """The fixed twin of a `.numpy()` behind a flag: in the CPU path, what only the GPU path moved is not
    on the device."""
    source = """
        def detect(model, img, use_cuda=True):
            if use_cuda:
                img = img.cuda()
            boxes = model(img)
            if use_cuda:
                out = boxes.cpu().data.numpy()
            else:
                out = boxes.data.numpy()
            return out
        """
    assert findings(source) == []
    buggy = source.replace("out = boxes.cpu().data.numpy()", "out = boxes.data.numpy()")
    assert findings(buggy) == [(7, "DK010")]


def test_the_else_of_a_cpu_flag_is_the_gpu_path():
    env = where(
        """
        x = torch.zeros(3)
        if args.no_cuda:
            pass
        else:
            x = x.cuda()
        y = x.cuda() if use_cuda else x
        z = x if device == "cpu" else x.to(device)
        """
    )
    assert env["x"] == env["y"] == env["z"] == "tensor@device"


def test_a_test_about_one_tensor_is_not_a_gpu_test():
    env = where(
        """
        x = torch.zeros(3)
        if x.is_cuda:
            x = x.cuda()
        """
    )
    assert env["x"] == "tensor@unknown"


def test_a_model_built_under_with_device_is_not_on_the_cpu():
    """`with device:` (a `torch.device` is a context manager) builds the model there: no DK201."""
    source = """
        if torch.cuda.is_available():
            device = torch.device("cuda")
        else:
            device = torch.device("cpu")
        with device:
            model = Qwen3Model(CONFIG)
        model(torch.tensor([1, 2, 3]).unsqueeze(0).to(device))
        """
    assert findings(source) == []
    assert findings(source.replace("with device:", "if True:")) == [(8, "DK201")]


# --- class methods of torch.nn that build modules --------------------------------------------------------

EMBEDDING = """
    class Encoder(nn.Module):
        def __init__(self, table):
            super().__init__()
            self.pos_emb = nn.Embedding.from_pretrained(table, freeze=True)

        def forward(self, x):
            return x + self.pos_emb({positions})
    """


def test_from_pretrained_of_an_nn_class_builds_a_submodule():
    assert where(EMBEDDING.format(positions="x"), "Encoder.forward")["self.pos_emb"] == "module@input"
    assert findings(EMBEDDING.format(positions="torch.LongTensor([[1, 2, 3, 4, 0]])")) == [(8, "DK003")]


def test_from_pretrained_fed_the_input_is_silent():
    assert findings(EMBEDDING.format(positions="x")) == []


# --- lists filled in a loop, and a model's output object --------------------------------------------------

LOSSES = """
    model = Net().cuda()
    criterion = torch.nn.CrossEntropyLoss()
    losses = []
    for x, y in loader:
        x, y = x.cuda(), y.cuda()
        loss = criterion(model(x), y)
        losses.append({kept})
    print(np.mean(losses))
    """


def test_a_list_filled_with_device_tensors_in_a_loop_holds_device_tensors():
    assert where(LOSSES.format(kept="loss"))["losses"] == "seq@unknown"
    assert places(textwrap.dedent(LOSSES.format(kept="loss")))["losses"].item.place.kind == "device"


def test_np_mean_over_a_list_of_device_losses_is_found_and_names_the_list():
    source = LOSSES.format(kept="loss")
    assert findings(source) == [(9, "DK010")]
    (text,) = messages(source)
    assert "`losses` holds `loss`, which is the output of `model`" in text
    (text_zh,) = messages(source, "zh")
    assert "`losses` 里装的是 `loss`，它是 `model` 的输出" in text_zh


def test_np_mean_over_a_list_of_items_is_silent():
    assert findings(LOSSES.format(kept="loss.item()")) == []
    assert findings(LOSSES.format(kept="loss.cpu()")) == []


def test_a_list_given_something_unknown_is_unknown():
    source = textwrap.dedent(LOSSES.format(kept="loss")) + "losses.append(other)\nprint(np.mean(losses))\n"
    assert [code for _, code in findings(source)] == ["DK010"]  # only the first `np.mean`


OUTPUT = """
    model = AutoModelForSequenceClassification.from_pretrained("bert-base-uncased").to(device)
    criterion = torch.nn.CrossEntropyLoss()
    for data in loader:
        inputs = {{k: v.to(device) for k, v in data.items() if k != "labels"}}
        outputs = model(**inputs)
        loss = criterion(outputs.logits, {labels})
    """


def test_the_logits_of_a_model_output_are_where_the_model_ran():
    assert findings(OUTPUT.format(labels='data["labels"]')) == [(7, "DK001")]


def test_the_logits_against_moved_labels_are_silent():
    assert findings(OUTPUT.format(labels='data["labels"].to(device)')) == []


# --- where a batch comes from: zip of loaders, `**batch`, a trainer's loss attribute ---------------------

ZIP = """
    model = Net().to(device)
    criterion = torch.nn.MSELoss()
    for (x, y), (u, v) in zip(src_loader, tgt_loader):
        x = x.to(device)
        loss = criterion(model(x), {target})
    """


def test_each_target_of_a_zip_of_loaders_is_a_batch():
    assert findings(ZIP.format(target="y")) == [(6, "DK001")]
    assert where(ZIP.format(target="y"))["u"] == "batch@host"


def test_a_zip_of_loaders_with_the_target_moved_is_silent():
    assert findings(ZIP.format(target="y.to(device)")) == []


SPREAD = """
    model = Net().to(device)
    for batch in train_loader:
        {move}
        outputs = model(**batch)
    """


def test_a_whole_batch_spread_into_a_moved_model_unmoved_is_found():
    assert findings(SPREAD.format(move="pass")) == [(5, "DK001")]


def test_a_whole_batch_moved_before_it_is_spread_is_silent():
    assert findings(SPREAD.format(move="batch = {k: v.to(device) for k, v in batch.items()}")) == []
    assert findings(SPREAD.format(move="batch.to(device)")) == []  # a BatchEncoding moves in place


TRAINER = """
    class Trainer:
        def __init__(self, model, device):
            self.device = device
            self.model = model.to(device)
            self.criterion = torch.nn.CrossEntropyLoss()

        def step(self, batch):
            images, labels = batch
            images = images.to(self.device)
            out = self.model(images)
            return self.criterion(out, {labels})

        def fit(self, loader):
            for batch in loader:
                self.step(batch)
    """


def test_a_trainer_loss_attribute_compares_a_batch_from_the_caller():
    assert findings(TRAINER.format(labels="labels")) == [(12, "DK001")]
    (text,) = messages(TRAINER.format(labels="labels"))
    assert "`labels` comes from the caller at line 16" in text


def test_a_trainer_loss_attribute_with_moved_labels_is_silent():
    assert findings(TRAINER.format(labels="labels.to(self.device)")) == []


# --- a model split over devices (scenario 15, DK015) -----------------------------------------------------

SPLIT = """
    class ModelParallelResNet50(nn.Module):
        def __init__(self):
            super().__init__()
            self.seq1 = nn.Sequential(nn.Conv2d(3, 64, 3), nn.ReLU()).to("cuda:0")
            self.seq2 = nn.Sequential(nn.Conv2d(64, 64, 3), nn.ReLU()).to("cuda:1")
            self.fc = nn.Linear(64, 10).to("cuda:1")

        def forward(self, x):
            x = self.seq2({between})
            return self.fc(x.view(x.size(0), -1))
    """


def test_stages_on_two_named_gpus_keep_their_devices():
    env = places(textwrap.dedent(SPLIT.format(between="self.seq1(x)")), "ModelParallelResNet50.forward")
    assert (env["self.seq1"].place.index, env["self.seq2"].place.index) == (0, 1)


def test_a_stage_given_the_previous_stage_output_unmoved_is_found():
    source = SPLIT.format(between="self.seq1(x)")
    assert findings(source) == [(10, "DK015")]
    (text,) = messages(source)
    assert "`self.seq1(x)` is the output of `self.seq1`, which is moved to `cuda:0` at line 5" in text
    assert "it meets `self.seq2`, which is moved to `cuda:1` at line 6" in text
    (text_zh,) = messages(source, "zh")
    assert "在第 6 行移到了 `cuda:1` 上" in text_zh


def test_a_stage_given_the_previous_output_moved_is_silent():
    assert findings(SPLIT.format(between='self.seq1(x).to("cuda:1")')) == []


def test_one_named_gpu_is_no_split():
    one = SPLIT.format(between="self.seq1(x)").replace('"cuda:1"', '"cuda:0"')
    assert findings(one) == []
    assert places(textwrap.dedent(one), "ModelParallelResNet50.forward")["self.seq2"].place.kind == "input"


def test_tensors_on_two_named_gpus_meet():
    source = 'a = torch.randn(3, device="cuda:0")\nb = torch.randn(3, device="cuda:1")\nc = a + b\n'
    assert findings(source) == [(3, "DK015")]
    assert findings(source.replace("a + b", 'a + b.to("cuda:0")')) == []


# --- helpers and objects that hold CPU tables, indexed with device indices (scenario 11) -----------------

HELPER = """
    def pick(table, idx):
        return table[idx]

    def train(loader, device):
        table = torch.linspace(0, 1, 1000){fix}
        for x, t in loader:
            t = t.to(device)
            a = pick(table, t)
    """


def test_a_helper_given_a_cpu_table_and_device_indices_is_read():
    """`pick` places nothing itself; it is read because the call hands it the CPU and a device."""
    assert findings(HELPER.format(fix="")) == [(3, "DK011")]
    (text,) = messages(HELPER.format(fix=""))
    assert "`table` comes from the caller at line 9 (it is created on the CPU at line 6)" in text


def test_a_helper_given_a_table_on_the_device_is_silent():
    assert findings(HELPER.format(fix=".to(device)")) == []


SCHEDULE = """
    class Diffusion:
        def __init__(self, T):
            self.betas = torch.linspace(1e-4, 0.02, T){fix}
            self.alphas_cumprod = torch.cumprod(1 - self.betas, 0)

        def q_sample(self, x0, t, noise):
            a = self.alphas_cumprod[t]
            return a.sqrt() * x0 + (1 - a).sqrt() * noise

    def train(loader, device):
        diff = Diffusion(1000)
        for x0, _ in loader:
            x0 = x0.to(device)
            t = torch.randint(0, 1000, (x0.size(0),), device=device)
            xt = diff.q_sample(x0, t, torch.randn_like(x0))
    """


def test_an_object_of_a_project_class_is_read_with_its_attributes():
    """One finding: the table indexed with the device's timesteps (what the failed index gives is not
    reported again where it meets `x0`)."""
    assert findings(SCHEDULE.format(fix="")) == [(8, "DK011")]
    (text,) = messages(SCHEDULE.format(fix=""))
    assert "`self.alphas_cumprod` is created on the CPU at line 4" in text  # (the factory it comes from)


def test_an_object_whose_tables_are_on_the_device_is_silent():
    assert findings(SCHEDULE.format(fix='.to("cuda")')) == []
