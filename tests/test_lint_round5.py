"""Round 5 of issue 43: inferences of the device-flow analysis that the misses of the fresh set (41 real bugs,
retired as a judge and studied this round) showed missing. Each has a found case and a silent twin; the
cases are written for these tests in the shape of the real bugs, not copied from the set."""

from __future__ import annotations

import textwrap
from pathlib import Path

from devicekit.lint import DEFAULT_CODES, lint_source
from devicekit.lint.dataflow import places
from devicekit.lint.engine import lint_paths


def findings(source: str) -> list[tuple[int, str]]:
    return [(f.line, f.code) for f in lint_source(textwrap.dedent(source), "train.py", DEFAULT_CODES)]


def project_findings(tmp_path: Path, files: dict[str, str]) -> list[tuple[str, int, str]]:
    for name, text in files.items():
        path = tmp_path / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(text))
    found, _errors = lint_paths([str(tmp_path)], DEFAULT_CODES)
    return sorted((Path(f.path).relative_to(tmp_path).as_posix(), f.line, f.code) for f in found)


# --- what a project base class's __init__ leaves in self.x ----------------------------------------------

BASE_CLASS = """
    import numpy as np
    import torch
    from transformers import BertModel


    class BERTObject:
        def __init__(self, model=None, device="cuda"):
            self.device = torch.device(device)
            if model is None:
                self.model = BertModel.from_pretrained("bert-base-uncased").to(self.device)
            else:
                self.model = model.to(self.device)


    class Encoder(BERTObject):
        def __init__(self, model=None, device="cuda"):
            super().__init__(model=model, device=device)

        def encode(self, input_ids):
            segments = torch.LongTensor(np.array(input_ids > 0)){fix}
            return self.model(input_ids.to(self.device), segments)
    """


def test_a_model_the_base_class_moved_is_on_the_device_in_the_subclass():
    assert findings(BASE_CLASS.format(fix="")) == [(21, "DK003")]


def test_a_model_the_base_class_moved_twin_moves_the_tensor():
    assert findings(BASE_CLASS.format(fix=".to(self.device)")) == []


def test_a_subclass_that_sets_the_attribute_itself_does_not_inherit_it():
    source = BASE_CLASS.replace(
        "super().__init__(model=model, device=device)",
        "super().__init__(model=model, device=device)\n            self.model = make_model()",
    )
    assert findings(source.format(fix="")) == []


def test_a_module_on_one_path_and_a_moved_value_on_the_other_are_both_moved():
    env = places(
        textwrap.dedent(
            """
            import torch
            from transformers import BertModel

            def build(model, device="cuda"):
                if model is None:
                    m = BertModel.from_pretrained("b").to(device)
                else:
                    m = model.to(device)
            """
        ),
        "build",
    )
    assert env["m"].kind == "moved" and env["m"].place.kind == "device"


# --- a class on a base from code not read, that builds torch.nn layers and has forward ------------------

FOREIGN_BASE = """
    import torch
    import torch.nn as nn
    from pytext.models.representation_base import RepresentationBase


    class BiLSTM(RepresentationBase):
        def __init__(self, config):
            super().__init__(config)
            self.lstm = nn.LSTM(8, 16)

        def forward(self, tokens, states=None):
            if states is None:
                state = torch.zeros(1, tokens.size(0), 16{device})
                states = (state, state)
            rep, new_state = self.lstm(tokens, states)
            return rep
    """


def test_a_class_on_a_foreign_base_that_builds_layers_and_has_forward_is_a_module():
    assert findings(FOREIGN_BASE.format(device="")) == [(14, "DK006")]


def test_a_class_on_a_foreign_base_twin_creates_the_state_on_the_input_device():
    assert findings(FOREIGN_BASE.format(device=", device=tokens.device")) == []


def test_a_class_on_a_foreign_base_without_forward_is_not_judged_a_module():
    source = FOREIGN_BASE.format(device="").replace("def forward(", "def run(")
    assert findings(source) == []


# --- a trainer given its model and loss: labels never moved ----------------------------------------------

TRAINER = """
    import torch
    from tqdm import tqdm


    class Trainer:
        def __init__(self, model, criterion, device="cpu"):
            self.model = model
            self.criterion = criterion
            self.device = device

        def train(self, train_dataloader):
            pbar = tqdm(enumerate(train_dataloader))
            for step, (data, labels) in pbar:
                out = self.model(data.to(self.device)){fix}
                loss = self.criterion(out, labels)
            return loss
    """


def test_a_trainer_loss_gets_the_model_output_and_labels_never_moved():
    assert findings(TRAINER.format(fix="")) == [(16, "DK001")]


def test_a_trainer_twin_moves_the_labels():
    assert findings(TRAINER.format(fix="\n                labels = labels.to(self.device)")) == []


def test_a_loss_given_as_a_parameter_compares_its_arguments():
    source = """
        def evaluate(model, criterion, val_loader, device):
            for x, y in val_loader:
                out = model(x.to(device))
                loss = criterion(out, y{fix})
            return loss
        """
    assert findings(source.format(fix="")) == [(5, "DK001")]
    assert findings(source.format(fix=".to(device)")) == []


def test_a_loader_wrapped_in_a_variable_is_still_a_loader():
    env = places(
        textwrap.dedent(
            """
            from tqdm import tqdm

            def run(train_loader):
                pbar = tqdm(enumerate(train_loader))
                for i, (x, y) in pbar:
                    pass
            """
        ),
        "run",
    )
    assert env["x"].batch and env["x"].place.kind == "host"


def test_a_variable_rebound_to_something_else_is_not_a_wrapped_loader():
    env = places(
        textwrap.dedent(
            """
            from tqdm import tqdm

            def run(train_loader, other):
                pbar = tqdm(enumerate(train_loader))
                pbar = other
                for i, (x, y) in pbar:
                    pass
            """
        ),
        "run",
    )
    assert "x" not in env


# --- a global default device that reaches a shuffling loader in another file ------------------------------


def test_a_default_device_set_before_a_project_call_that_builds_a_shuffling_loader(tmp_path):
    files = {
        "main.py": """
            import torch
            from utils.data import setup_loaders


            def main(args):
                if args.cuda:
                    torch.set_default_tensor_type("torch.cuda.FloatTensor")
                loaders = setup_loaders(args.batch_size)
                return loaders
            """,
        "utils/__init__.py": "",
        "utils/data.py": """
            from torch.utils.data import DataLoader


            def setup_loaders(batch_size):
                return {"train": DataLoader(range(10), batch_size=batch_size, shuffle=True)}
            """,
    }
    assert project_findings(tmp_path, files) == [("main.py", 8, "DK012")]


def test_a_default_device_twin_without_the_default_is_silent(tmp_path):
    files = {
        "main.py": """
            import torch
            from utils.data import setup_loaders


            def main(args):
                loaders = setup_loaders(args.batch_size)
                return loaders
            """,
        "utils/__init__.py": "",
        "utils/data.py": """
            from torch.utils.data import DataLoader


            def setup_loaders(batch_size):
                return {"train": DataLoader(range(10), batch_size=batch_size, shuffle=True)}
            """,
    }
    assert project_findings(tmp_path, files) == []


def test_a_default_device_set_after_the_loaders_are_built_is_silent(tmp_path):
    files = {
        "main.py": """
            import torch
            from utils.data import setup_loaders


            def main(args):
                loaders = setup_loaders(args.batch_size)
                torch.set_default_device("cuda")
                return loaders
            """,
        "utils/__init__.py": "",
        "utils/data.py": """
            from torch.utils.data import DataLoader


            def setup_loaders(batch_size):
                return DataLoader(range(10), batch_size=batch_size, shuffle=True)
            """,
    }
    assert project_findings(tmp_path, files) == []


# --- what a function returns on the path a GPU machine takes ----------------------------------------------

GET_DEVICE = """
    import torch


    def get_device():
        if torch.cuda.is_available():
            return torch.device("cuda:0")
        elif torch.backends.mps.is_available():
            return torch.device("mps")
        else:
            return torch.device("cpu")


    def predict(model, x):
        device = get_device()
        model = model.to(device)
        y = model(x.to(device))
        return y.detach(){fix}.numpy()
    """


def test_a_function_that_returns_a_device_on_the_gpu_path_gives_that_device():
    assert findings(GET_DEVICE.format(fix="")) == [(18, "DK010")]


def test_a_function_that_returns_a_device_on_the_gpu_path_twin_moves_to_the_cpu():
    assert findings(GET_DEVICE.format(fix=".cpu()")) == []


def test_returns_after_a_gpu_test_that_does_not_return_are_joined_as_before():
    env = places(
        textwrap.dedent(
            """
            import torch

            def pick(flag):
                if flag:
                    return torch.device("cuda:0")
                return torch.device("cpu")

            def run():
                device = pick(True)
            """
        ),
        "run",
    )
    assert "device" not in env or env["device"].place.kind == "unknown"


# --- a tokenizer's output with return_tensors="pt" ----------------------------------------------------------

TOKENS = """
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer


    class Decoder:
        def __init__(self, name):
            self.device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
            self.tokenizer = AutoTokenizer.from_pretrained(name)
            self.model = AutoModelForCausalLM.from_pretrained(name).to(self.device)

        def codegen(self, prompt):
            input_tokens = self.tokenizer.encode(prompt, return_tensors="pt")
            {move}
            return self.model.generate(input_tokens)
    """


def test_a_tokenizer_output_moved_as_a_statement_is_a_dropped_move():
    # round 6: `generate` runs the model, so the unmoved ids are also reported where they meet it (DK001),
    # as `self.model(input_tokens)` was already
    assert findings(TOKENS.format(move="input_tokens.to(self.device)")) == [(14, "DK002"), (15, "DK001")]


def test_a_tokenizer_output_twin_assigns_the_move():
    assert findings(TOKENS.format(move="input_tokens = input_tokens.to(self.device)")) == []


def test_a_tokenizer_batch_encoding_moves_in_place_and_is_no_dropped_move():
    source = TOKENS.replace(".encode(prompt, ", "(prompt, ").replace(
        "generate(input_tokens)", "generate(**input_tokens)"
    )
    assert findings(source.format(move="input_tokens.to(self.device)")) == []


def test_a_tokenizer_batch_never_moved_into_a_moved_model_is_dk001():
    source = """
        import torch
        from transformers import AutoModel, AutoTokenizer

        tokenizer = AutoTokenizer.from_pretrained("bert-base-uncased")
        model = AutoModel.from_pretrained("bert-base-uncased").to("cuda")
        inputs = tokenizer(["hello"], return_tensors="pt"){fix}
        outputs = model(**inputs)
        """
    assert findings(source.format(fix="")) == [(8, "DK001")]
    assert findings(source.format(fix='.to("cuda")')) == []


# --- a type test says what a parameter is ------------------------------------------------------------------

LOOK = """
    import torch


    def look(vertices, direction=(0, 1, 0)):
        device = vertices.device
        if isinstance(direction, (list, tuple)):
            direction = torch.tensor(direction, device=device)
        elif torch.is_tensor(direction):
            {move}
        return direction
    """


def test_a_parameter_shown_a_tensor_by_is_tensor_moved_as_a_statement_is_a_dropped_move():
    assert findings(LOOK.format(move="direction.to(device)")) == [(10, "DK002")]


def test_a_parameter_shown_a_tensor_twin_assigns_the_move():
    assert findings(LOOK.format(move="direction = direction.to(device)")) == []


def test_a_tensor_moved_to_a_dtype_only_is_not_a_dropped_device_move():
    assert findings(LOOK.format(move="direction.to(torch.float32)")) == []


def test_a_type_test_is_not_reported_again_at_a_call_that_does_not_take_that_path(tmp_path):
    files = {
        "look.py": LOOK.format(move="direction.to(device)"),
        "render.py": """
            from look import look


            def render(vertices):
                return look(vertices)
            """,
    }
    assert project_findings(tmp_path, files) == [("look.py", 10, "DK002")]


# --- DataParallel on one path of a test, around a model never moved -----------------------------------------

WRAPPED_ON_ONE_PATH = """
    import torch
    import torch.nn as nn


    class Net(nn.Module):
        def __init__(self):
            super().__init__()
            self.fc = nn.Linear(3, 3)

        def forward(self, x):
            return self.fc(x)


    def predict(config, x):
        model = Net()
        if config["data_parallel"]:
            model = torch.nn.DataParallel(model)
        {move}
        return model(x)
    """


def test_a_model_wrapped_on_one_path_and_never_moved_is_dk013():
    assert findings(WRAPPED_ON_ONE_PATH.format(move="")) == [(18, "DK013")]


def test_a_model_wrapped_on_one_path_twin_moves_it():
    assert findings(WRAPPED_ON_ONE_PATH.format(move='model = model.to("cuda")')) == []


# --- pad_sequence gives one tensor where its sequences are --------------------------------------------------

PADDED = """
    import torch
    import torch.nn as nn


    def run(data, device):
        model = nn.Linear(3, 3).to(device)
        tensors = [torch.tensor([1.0, 2.0, 3.0]{device}) for token in data]
        padded = torch.nn.utils.rnn.pad_sequence(tensors, batch_first=True)
        return model(padded)
    """


def test_pad_sequence_of_cpu_tensors_into_a_moved_model_is_found():
    assert findings(PADDED.format(device="")) == [(8, "DK003")]


def test_pad_sequence_twin_makes_the_tensors_on_the_device():
    assert findings(PADDED.format(device=", device=device")) == []


# --- judged false on real code: an index annotated `Tensor` ---------------------------------------------


def test_an_index_parameter_annotated_tensor_kept_as_an_attribute_is_not_dk004():
    source = """
        import torch.nn as nn
        from torch import Tensor


        class Encoder(nn.Module):
            def __init__(self, dim: int, {name}: Tensor) -> None:
                super().__init__()
                self.{name} = {name}
                self.proj = nn.Linear(dim, dim)

            def forward(self, tokens):
                return self.proj(tokens)
        """
    assert findings(source.format(name="padding_idx")) == []
    assert findings(source.format(name="feature_set")) == [(9, "DK004")]


# --- a submodule on one path of __init__ and None on the other; a device default filled by the code ---------

BUCKETS = """
    import torch
    import torch.nn as nn


    class Attention(nn.Module):
        def __init__(self, buckets, heads, relative=False):
            super().__init__()
            if relative:
                self.bias = nn.Embedding(buckets, heads)
            else:
                self.bias = None

        def compute_bias(self, length, device=None):
            if device is None:
                device = self.bias.weight.device
            position = torch.arange(length, dtype=torch.long, device=device)
            buckets = torch.zeros(position.shape, dtype=torch.long{fix})
            buckets += position
            return buckets
    """


def test_a_device_default_filled_with_an_optional_submodule_device_meets_a_cpu_tensor():
    assert findings(BUCKETS.format(fix="")) == [(18, "DK003")]


def test_a_device_default_filled_twin_creates_the_tensor_there():
    assert findings(BUCKETS.format(fix=", device=device")) == []


def test_a_device_default_filled_with_the_cpu_is_not_followed():
    source = BUCKETS.replace("device = self.bias.weight.device", 'device = torch.device("cpu")')
    assert findings(source.format(fix="")) == []


def test_a_submodule_or_none_is_a_submodule_where_it_is_used():
    source = """
        import torch
        import torch.nn as nn


        class Head(nn.Module):
            def __init__(self, dim, project=True):
                super().__init__()
                self.proj = nn.Linear(dim, dim) if project else None

            def forward(self, x):
                extra = torch.ones(x.size(0), 4{fix})
                return self.proj(extra)
        """
    assert findings(source.format(fix="")) == [(12, "DK003")]
    assert findings(source.format(fix=", device=x.device")) == []
