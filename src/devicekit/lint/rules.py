"""The registry of devicelint's rules, read by the checks, the CLI, the docs and the tests.

A code is `DK` and three digits. The last two digits are the number of the scenario in the course's list
of the device bugs learners hit most (`DK003` is scenario 3, a tensor created in `forward` without a
device); a second rule for the same scenario adds 200 (`DK214`), and the opt-in style rules are `DK9nn`.
"""

from __future__ import annotations

from dataclasses import dataclass

from devicekit.messages import Message, join, localised


@dataclass(frozen=True)
class Rule:
    """One lint rule.

    Attributes:
        code: ``DKnnn``.
        scenario: number of the scenario (1–15) of the course's bug list that the rule finds.
        name: short kebab-case name.
        title_en: what the rule finds, in English (one line; the message printed for a finding).
        title_zh: the same in Chinese.
        fix_en: how to fix it, in English.
        fix_zh: the same in Chinese.
        default: on unless selected explicitly (`False` for the opt-in style rules).
        bad: a snippet the rule reports.
        good: its fixed twin, which the rule leaves alone.
        fixable: `--fix` rewrites it.
    """

    code: str
    scenario: int
    name: str
    title_en: str
    title_zh: str
    fix_en: str
    fix_zh: str
    default: bool
    bad: str
    good: str
    fixable: bool = False


_RULES = [
    Rule(
        code="DK001",
        scenario=1,
        name="batch-not-moved",
        title_en="a batch (from a DataLoader or a tokenizer) goes into a model or loss that was moved to a "
        "device, but the batch itself was never moved",
        title_zh="模型（或损失函数）已移到设备上，但传进去的批次（来自 DataLoader 或分词器）没有移动",
        fix_en="move every part of the batch first: `x, y = x.to(device), y.to(device)`",
        fix_zh="先把批次的每一部分都移过去：`x, y = x.to(device), y.to(device)`",
        default=True,
        bad="""\
model = Net().to(device)
loader = DataLoader(dataset, batch_size=32)
for x, y in loader:
    loss = criterion(model(x), y)
""",
        good="""\
model = Net().to(device)
loader = DataLoader(dataset, batch_size=32)
for x, y in loader:
    x, y = x.to(device), y.to(device)
    loss = criterion(model(x), y)
""",
    ),
    Rule(
        code="DK201",
        scenario=1,
        name="model-not-moved",
        title_en="a model built here is called with a batch that was moved to a device, "
        "but the model itself was never moved",
        title_zh="这里构建的模型从未移动，却用已移到设备上的批次调用它",
        fix_en="move the model once, right after building it: `model = Net().to(device)`",
        fix_zh="构建模型后立即移动一次：`model = Net().to(device)`",
        default=True,
        bad="""\
model = Net()
for x, y in loader:
    x, y = x.to(device), y.to(device)
    loss = criterion(model(x), y)
""",
        good="""\
model = Net().to(device)
for x, y in loader:
    x, y = x.to(device), y.to(device)
    loss = criterion(model(x), y)
""",
    ),
    Rule(
        code="DK002",
        scenario=2,
        name="to-result-discarded",
        title_en="the result of `Tensor.to()` / `.cuda()` is thrown away: a tensor is not moved in place",
        title_zh="`Tensor.to()` / `.cuda()` 的结果被丢弃了：张量不会原地移动",
        fix_en="assign the result: `x = x.to(device)` (only `Module.to` moves in place)",
        fix_zh="把结果赋回去：`x = x.to(device)`（只有 `Module.to` 是原地移动）",
        default=True,
        bad="""\
for x, y in loader:
    x.to(device)
    y.to(device)
""",
        good="""\
for x, y in loader:
    x = x.to(device)
    y = y.to(device)
""",
        fixable=True,
    ),
    Rule(
        code="DK003",
        scenario=3,
        name="factory-in-forward",
        title_en="a tensor created without `device=` (in `forward`, or in a function that works on the "
        "model's data) meets the input or the module's weights: it is on the CPU (or the default device) "
        "whatever device they are on",
        title_zh="创建张量时没有指定 `device=`（在 `forward` 里，或在处理模型数据的函数里），"
        "它又与输入或模块的权重一起运算：不管它们在哪个设备上，它都在 CPU（或默认设备）上",
        fix_en="pass `device=x.device`, or use `x.new_zeros(...)` / `torch.zeros_like(x)`, "
        "or keep it as a buffer",
        fix_zh="传入 `device=x.device`，或改用 `x.new_zeros(...)` / `torch.zeros_like(x)`，"
        "或把它注册成缓冲区",
        default=True,
        bad="""\
class Net(nn.Module):
    def forward(self, x):
        noise = torch.randn(x.shape)
        return x + noise
""",
        good="""\
class Net(nn.Module):
    def forward(self, x):
        noise = torch.randn(x.shape, device=x.device)
        return x + noise
""",
    ),
    Rule(
        code="DK903",
        scenario=3,
        name="factory-in-forward-unsure",
        title_en="a tensor created without `device=` in a module's method may meet the module's data (read "
        "from the method's shape, not followed to where the tensor goes: right too rarely on real code to "
        "be on by default)",
        title_zh="模块方法里创建张量时没有指定 `device=`，它可能与模块的数据一起运算（从方法的写法推断，"
        "没有跟踪张量去了哪里：在真实代码上正确率太低，默认不开启）",
        fix_en="pass `device=x.device`, or use `x.new_zeros(...)` / `torch.zeros_like(x)`, "
        "or keep it as a buffer",
        fix_zh="传入 `device=x.device`，或改用 `x.new_zeros(...)` / `torch.zeros_like(x)`，"
        "或把它注册成缓冲区",
        default=False,
        bad="""\
class Net(nn.Module):
    def forward(self, x):
        steps = torch.arange(x.shape[1])
        return self.embed(x) + steps
""",
        good="""\
class Net(nn.Module):
    def forward(self, x):
        steps = torch.arange(x.shape[1], device=x.device)
        return self.embed(x) + steps
""",
    ),
    Rule(
        code="DK004",
        scenario=4,
        name="plain-tensor-attribute",
        title_en="a plain tensor attribute in an `nn.Module`: `model.to()` does not move it "
        "and `state_dict()` does not save it",
        title_zh="`nn.Module` 里的普通张量属性：`model.to()` 不会移动它，`state_dict()` 也不会保存它",
        fix_en='`self.register_buffer("name", tensor)` for a constant, `nn.Parameter(tensor)` for a weight',
        fix_zh='常量用 `self.register_buffer("name", tensor)`，要训练的权重用 `nn.Parameter(tensor)`',
        default=True,
        bad="""\
class Net(nn.Module):
    def __init__(self, n):
        super().__init__()
        self.mask = torch.tril(torch.ones(n, n))
""",
        good="""\
class Net(nn.Module):
    def __init__(self, n):
        super().__init__()
        self.register_buffer("mask", torch.tril(torch.ones(n, n)))
""",
    ),
    Rule(
        code="DK005",
        scenario=5,
        name="modules-in-plain-container",
        title_en="submodules kept in a plain Python list or dict: not moved by `model.to()`, "
        "not in `parameters()`, not in `state_dict()`",
        title_zh="子模块放在普通的 Python 列表或字典里：`model.to()` 不会移动它们，"
        "`parameters()` 和 `state_dict()` 里也没有它们",
        fix_en="use `nn.ModuleList([...])` or `nn.ModuleDict({...})`",
        fix_zh="改用 `nn.ModuleList([...])` 或 `nn.ModuleDict({...})`",
        default=True,
        bad="""\
class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.layers = [nn.Linear(8, 8) for _ in range(3)]
""",
        good="""\
class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.layers = nn.ModuleList([nn.Linear(8, 8) for _ in range(3)])
""",
    ),
    Rule(
        code="DK006",
        scenario=6,
        name="rnn-hidden-on-cpu",
        title_en="an RNN/LSTM/GRU hidden state is created without `device=`: "
        "it stays on the CPU while the input is on the accelerator",
        title_zh="创建 RNN/LSTM/GRU 的隐藏状态时没有指定 `device=`：输入在加速器上，它却留在 CPU 上",
        fix_en="create it on the input's device: `torch.zeros(..., device=x.device)`",
        fix_zh="在输入所在的设备上创建：`torch.zeros(..., device=x.device)`",
        default=True,
        bad="""\
class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.lstm = nn.LSTM(8, 16, batch_first=True)

    def forward(self, x):
        h0 = torch.zeros(1, x.size(0), 16)
        c0 = torch.zeros(1, x.size(0), 16)
        return self.lstm(x, (h0, c0))
""",
        good="""\
class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.lstm = nn.LSTM(8, 16, batch_first=True)

    def forward(self, x):
        h0 = torch.zeros(1, x.size(0), 16, device=x.device)
        c0 = torch.zeros(1, x.size(0), 16, device=x.device)
        return self.lstm(x, (h0, c0))
""",
    ),
    Rule(
        code="DK007",
        scenario=7,
        name="loss-weight-on-cpu",
        title_en="a loss built with a CPU tensor (`weight=`, `pos_weight=`) is never moved, "
        "while the model is moved to a device",
        title_zh="模型移到了设备上，但损失函数的张量参数（`weight=`、`pos_weight=`）建在 CPU 上，"
        "损失函数也没有移动",
        fix_en="move the loss too: `criterion = nn.CrossEntropyLoss(weight=w).to(device)`",
        fix_zh="把损失函数也移过去：`criterion = nn.CrossEntropyLoss(weight=w).to(device)`",
        default=True,
        bad="""\
model = Net().to(device)
criterion = nn.CrossEntropyLoss(weight=torch.tensor([1.0, 3.0]))
""",
        good="""\
model = Net().to(device)
criterion = nn.CrossEntropyLoss(weight=torch.tensor([1.0, 3.0])).to(device)
""",
    ),
    Rule(
        code="DK008",
        scenario=8,
        name="load-without-map-location",
        title_en="`torch.load` without `map_location`: a checkpoint saved on a GPU fails to load "
        "on a machine without that GPU",
        title_zh="`torch.load` 没有指定 `map_location`："
        "在 GPU 上保存的检查点，到了没有那块 GPU 的机器上就加载失败",
        fix_en='`torch.load(path, map_location="cpu")`, then move the model',
        fix_zh='`torch.load(path, map_location="cpu")`，再移动模型',
        default=True,
        bad="""\
state = torch.load("checkpoint.pt")
""",
        good="""\
state = torch.load("checkpoint.pt", map_location="cpu")
""",
        fixable=True,
    ),
    Rule(
        code="DK009",
        scenario=9,
        name="optimizer-state-before-move",
        title_en="optimizer state is made before the model is moved (`optimizer.load_state_dict()`, or "
        "`Adagrad`, which creates its state when it is built): the state stays on the old device",
        title_zh="优化器状态在移动模型之前就已生成（`optimizer.load_state_dict()`，或构造时就创建状态的 "
        "`Adagrad`）：状态会留在原来的设备上",
        fix_en="move the model first, then load the optimizer's state "
        "(`load_state_dict` casts the state to each parameter's device)",
        fix_zh="先移动模型，再加载优化器状态（`load_state_dict` 会把状态放到每个参数所在的设备上）",
        default=True,
        bad="""\
model = Net()
optimizer = torch.optim.Adam(model.parameters())
optimizer.load_state_dict(ckpt["optimizer"])
model.to(device)
""",
        good="""\
model = Net()
optimizer = torch.optim.Adam(model.parameters())
model.to(device)
optimizer.load_state_dict(ckpt["optimizer"])
""",
    ),
    Rule(
        code="DK010",
        scenario=10,
        name="numpy-on-accelerator",
        title_en="a tensor that was moved to a device goes to NumPy (`.numpy()`, `np.sum(...)`): "
        "NumPy only reads CPU tensors",
        title_zh="已移到设备上的张量交给了 NumPy（`.numpy()`、`np.sum(...)`）：NumPy 只能读取 CPU 上的张量",
        fix_en="`.detach().cpu().numpy()`, or stay in torch (`torch.stack(xs).sum(0)`, `sum(losses)`)",
        fix_zh="改成 `.detach().cpu().numpy()`，或者留在 torch 里（`torch.stack(xs).sum(0)`、`sum(losses)`）",
        default=True,
        bad="""\
x = x.to(device)
pred = model(x)
arr = pred.detach().numpy()
""",
        good="""\
x = x.to(device)
pred = model(x)
arr = pred.detach().cpu().numpy()
""",
    ),
    Rule(
        code="DK011",
        scenario=11,
        name="index-on-other-device",
        title_en="a CPU tensor is indexed with indices on an accelerator: indexing wants the indices on the "
        "CPU or on the indexed tensor's device",
        title_zh="用加速器上的索引去索引 CPU 张量：索引必须在 CPU 上，或与被索引的张量在同一设备上",
        fix_en="put the table where the indices are (`table.to(idx.device)`, or a buffer of the model), "
        "or bring the indices to the CPU (`idx.cpu()`)",
        fix_zh="把被索引的张量放到索引所在的设备上（`table.to(idx.device)`，或注册成模型的缓冲区），"
        "或把索引移回 CPU（`idx.cpu()`）",
        default=True,
        bad="""\
table = torch.arange(10)
idx = torch.tensor([1, 2], device="cuda")
picked = table[idx]
""",
        good="""\
table = torch.arange(10, device="cuda")
idx = torch.tensor([1, 2], device="cuda")
picked = table[idx]
""",
    ),
    Rule(
        code="DK012",
        scenario=12,
        name="default-device-with-shuffle",
        title_en="a global default accelerator (`torch.set_default_device`, or "
        '`set_default_tensor_type("torch.cuda.FloatTensor")`) with `DataLoader(shuffle=True)`: '
        "the sampler's own CPU generator does not match the default device",
        title_zh="设了全局默认加速器（`torch.set_default_device`，或 "
        '`set_default_tensor_type("torch.cuda.FloatTensor")`），又用了 `DataLoader(shuffle=True)`：'
        "采样器自己创建的 CPU 生成器与默认设备不一致",
        fix_en="put only model construction under `with torch.device(device):`, "
        "or give the DataLoader a generator on that device: `generator=torch.Generator(device=device)`",
        fix_zh="只把构建模型的代码放进 `with torch.device(device):`，"
        "或给 DataLoader 一个在该设备上的生成器：`generator=torch.Generator(device=device)`",
        default=True,
        bad="""\
torch.set_default_device("cuda")
loader = DataLoader(dataset, batch_size=32, shuffle=True)
""",
        good="""\
with torch.device("cuda"):
    model = Net()
loader = DataLoader(dataset, batch_size=32, shuffle=True)
""",
    ),
    Rule(
        code="DK013",
        scenario=13,
        name="data-parallel-device",
        title_en="`nn.DataParallel` (or `DistributedDataParallel` given `device_ids`) wraps a module that "
        "is not on `device_ids[0]`",
        title_zh="`nn.DataParallel`（或给了 `device_ids` 的 `DistributedDataParallel`）包装的模块不在 "
        "`device_ids[0]` 上",
        fix_en='move the module to `device_ids[0]` first: `model.to(f"cuda:{ids[0]}")`',
        fix_zh='先把模块移到 `device_ids[0]`：`model.to(f"cuda:{ids[0]}")`',
        default=True,
        bad="""\
model = Net().to("cuda:0")
model = nn.DataParallel(model, device_ids=[1, 2])
""",
        good="""\
model = Net().to("cuda:1")
model = nn.DataParallel(model, device_ids=[1, 2])
""",
    ),
    Rule(
        code="DK014",
        scenario=14,
        name="ddp-without-set-device",
        title_en="DDP on GPUs without `torch.cuda.set_device(local_rank)`: each rank's current CUDA device "
        "stays GPU 0 (extra memory there, possible hangs), and an index-less `cuda` puts every model on it",
        title_zh="在 GPU 上用 DDP 却没有调用 `torch.cuda.set_device(local_rank)`：每个 rank 的当前 CUDA 设备"
        "仍是 GPU 0（那里多占显存，还可能卡住），不带编号的 `cuda` 更会把所有模型都放到 GPU 0 上",
        fix_en="call `torch.cuda.set_device(local_rank)` (or `torch.accelerator.set_device_index`) "
        "at the start of each process, before building the model",
        fix_zh="在每个进程开头、构建模型之前调用 `torch.cuda.set_device(local_rank)`"
        "（或 `torch.accelerator.set_device_index`）",
        default=True,
        bad="""\
def main(local_rank):
    dist.init_process_group("nccl")
    model = Net().cuda()
    model = DDP(model, device_ids=[local_rank])
""",
        good="""\
def main(local_rank):
    dist.init_process_group("nccl")
    torch.cuda.set_device(local_rank)
    model = Net().cuda()
    model = DDP(model, device_ids=[local_rank])
""",
    ),
    Rule(
        code="DK015",
        scenario=15,
        name="stages-on-other-devices",
        title_en="a model split over devices: a tensor on one accelerator goes into a layer, or meets a "
        "tensor, that the code put on another",
        title_zh="模型拆到了多个设备上：一个加速器上的张量进了代码放在另一个加速器上的层，或与那里的张量相遇",
        fix_en="move the tensor to the next stage's device before it goes in "
        '(`self.seq2(x.to("cuda:1"))`), and the labels to the device of the last stage\'s output',
        fix_zh='在张量进入下一段之前把它移到那一段所在的设备上（`self.seq2(x.to("cuda:1"))`），'
        "标签则移到最后一段输出所在的设备上",
        default=True,
        bad="""\
class TwoGPUNet(nn.Module):
    def __init__(self):
        super().__init__()
        self.seq1 = nn.Linear(8, 8).to("cuda:0")
        self.seq2 = nn.Linear(8, 2).to("cuda:1")

    def forward(self, x):
        return self.seq2(self.seq1(x))
""",
        good="""\
class TwoGPUNet(nn.Module):
    def __init__(self):
        super().__init__()
        self.seq1 = nn.Linear(8, 8).to("cuda:0")
        self.seq2 = nn.Linear(8, 2).to("cuda:1")

    def forward(self, x):
        return self.seq2(self.seq1(x).to("cuda:1"))
""",
    ),
    Rule(
        code="DK214",
        scenario=14,
        name="spawn-notebook-function",
        title_en="`mp.spawn` / `Process(target=...)` of a function defined in the notebook: "
        "the child processes cannot import it from `__main__`",
        title_zh="`mp.spawn` / `Process(target=...)` 启动的是 notebook 里定义的函数："
        "子进程无法从 `__main__` 导入它",
        fix_en="put the function in a `.py` file and import it, or launch a script with `torchrun`",
        fix_zh="把函数写进 `.py` 文件再导入，或者写成脚本用 `torchrun` 启动",
        default=True,
        bad="""\
def worker(rank, world_size):
    pass

mp.spawn(worker, args=(2,), nprocs=2)
""",
        good="""\
from my_workers import worker

mp.spawn(worker, args=(2,), nprocs=2)
""",
    ),
    Rule(
        code="DK901",
        scenario=0,
        name="hard-coded-cuda",
        title_en='a hard-coded `"cuda"` device string: the code cannot run on another accelerator or the CPU',
        title_zh='硬编码的 `"cuda"` 设备字符串：代码无法在别的加速器或 CPU 上运行',
        fix_en="pick the device once (`device = torch.accelerator.current_accelerator()` or a "
        "`DeviceManager`) and pass it around",
        fix_zh="只在一处选定设备（`device = torch.accelerator.current_accelerator()` 或 `DeviceManager`），"
        "再到处传递它",
        default=False,
        bad="""\
x = torch.ones(3, device="cuda")
""",
        good="""\
x = torch.ones(3, device=device)
""",
    ),
    Rule(
        code="DK902",
        scenario=0,
        name="cuda-method",
        title_en="`.cuda()` ties the code to CUDA",
        title_zh="`.cuda()` 把代码绑死在 CUDA 上",
        fix_en="use `.to(device)` with a device chosen once",
        fix_zh="改用 `.to(device)`，设备只在一处选定",
        default=False,
        bad="""\
model = Net().cuda()
""",
        good="""\
model = Net().to(device)
""",
    ),
]

#: Every rule by code, in the order of the table in the docs.
RULES: dict[str, Rule] = {rule.code: rule for rule in _RULES}
#: Codes of the rules that run unless `--select` names others.
DEFAULT_CODES: frozenset[str] = frozenset(code for code, rule in RULES.items() if rule.default)


def get_rule(code: str) -> Rule:
    """The rule with this code.

    Raises:
        KeyError: no rule has this code.
    """
    try:
        return RULES[code.upper()]
    except KeyError:
        known = join(RULES)
        raise localised(
            KeyError,
            Message(
                f"unknown devicelint rule {code!r}; known: {known.en}",
                f"没有 devicelint 规则 {code!r}；已有的规则：{known.zh}",
            ),
        ) from None


def select_codes(select: list[str] | None = None, ignore: list[str] | None = None) -> frozenset[str]:
    """The codes that run for a `--select` / `--ignore` pair, prefixes allowed like flake8's (`DK0`, `DK`).

    With no `select`, the default rules run. A prefix in `select` takes every rule it matches, opt-in ones
    included, except the bare `DK` family prefix which means "the defaults".

    Raises:
        ValueError: a code or prefix matches no rule.
    """

    def matching(prefix: str) -> set[str]:
        prefix = prefix.strip().upper()
        codes = {code for code in RULES if code.startswith(prefix)}
        if not codes:
            known = join(RULES)
            raise localised(
                ValueError,
                Message(
                    f"{prefix!r} matches no devicelint rule; known: {known.en}",
                    f"{prefix!r} 不对应任何 devicelint 规则；已有的规则：{known.zh}",
                ),
            )
        return codes

    chosen: set[str] = set()
    for item in select or []:
        chosen |= set(DEFAULT_CODES) if item.strip().upper() == "DK" else matching(item)
    if not select:
        chosen = set(DEFAULT_CODES)
    for item in ignore or []:
        chosen -= matching(item)
    return frozenset(chosen)
