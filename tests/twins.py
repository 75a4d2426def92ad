"""Whether the Chinese twin of a page or notebook runs the same code as the English one: the comparison that
``test_parity.py`` asserts and that ``nbval_checks.py`` relies on to skip a Chinese notebook whose code
cells are the English twin's."""

from __future__ import annotations

import io
import os
import re
import tokenize
from pathlib import Path

#: Set to 1 to run every Chinese twin too, notebooks under nbval and lesson pages' snippets alike (CI sets it:
#: `.ci/run`, `.github/workflows/tests.yml`). Without it a twin whose code is its English page's or
#: notebook's (as compared here) is skipped locally, with that reason.
RUN_ALL = "DEVICEKIT_NBVAL_ALL"

FENCE = re.compile(r"^```(\w+)[^\n]*\n(.*?)^```", re.MULTILINE | re.DOTALL)
#: A Chinese string literal: Han characters or full-width punctuation ("设备：", "is t：").
TRANSLATED = re.compile(r"[\u3000-\u303f\u4e00-\u9fff\uff00-\uffef]")
#: The one string that differs by design: the notebook's own language in its setup cell.
LANGUAGE_TAGS = {(f"{q}en{q}", f"{q}zh{q}") for q in ('"', "'")}


def code_tokens(source: str) -> list[tuple[str, str]]:
    """The tokens of a code cell or snippet without comments and line breaks; strings stay whole.

    IPython syntax (``%pip``, ``!ls``) is first turned into the Python IPython runs. On Python 3.12+ an
    f-string arrives as several tokens; they are joined back into one string token.
    """
    from IPython.core.inputtransformer2 import TransformerManager

    python = TransformerManager().transform_cell(source)
    skip = {tokenize.COMMENT, tokenize.NL, tokenize.NEWLINE, tokenize.ENCODING, tokenize.ENDMARKER}
    fstring_start = getattr(tokenize, "FSTRING_START", None)
    fstring_end = getattr(tokenize, "FSTRING_END", None)
    tokens: list[tuple[str, str]] = []
    depth, pending = 0, ""
    for tok in tokenize.generate_tokens(io.StringIO(python).readline):
        if fstring_start is not None and (depth or tok.type == fstring_start):
            depth += (tok.type == fstring_start) - (tok.type == fstring_end)
            pending += tok.string
            if not depth:
                tokens.append(("STRING", pending))
                pending = ""
        elif tok.type not in skip:
            tokens.append((tokenize.tok_name[tok.type], tok.string))
    return tokens


def code_differences(en: str, zh: str, where: str) -> list[str]:
    """Where the code of two twins differs, ignoring comments and translated string literals.

    Comments may differ freely. A string literal may differ only where the Chinese one holds Chinese (a
    translated docstring, label or message); ``"cuda"`` against ``"cpu"`` is a difference.
    """
    a, b = code_tokens(en), code_tokens(zh)
    if [t for t, _ in a] != [t for t, _ in b]:
        return [f"{where}: the code differs beyond comments and strings:\n  en: {en!r}\n  zh: {zh!r}"]
    return [
        f"{where}: {x!r} (en) vs {y!r} (zh)"
        for (kind, x), (_, y) in zip(a, b, strict=True)
        if x != y and not (kind == "STRING" and (TRANSLATED.search(y) or (x, y) in LANGUAGE_TAGS))
    ]


def notebook_code_differences(en_path: Path, zh_path: Path) -> list[str]:
    """Where the code cells of two notebooks differ: their number, their code (as ``code_differences``
    sees it) or their tags. Empty when the Chinese notebook runs exactly the English one's code."""
    import nbformat

    en = [c for c in nbformat.read(en_path, as_version=4).cells if c.cell_type == "code"]
    zh = [c for c in nbformat.read(zh_path, as_version=4).cells if c.cell_type == "code"]
    if len(en) != len(zh):
        return [f"not the same number of code cells: {zh_path.name} {len(zh)}, {en_path.name} {len(en)}"]
    problems = []
    for number, (a, b) in enumerate(zip(en, zh, strict=True), 1):
        problems += code_differences(a.source, b.source, f"{zh_path.name}, code cell {number}")
        if a.metadata.get("tags", []) != b.metadata.get("tags", []):
            tags = f"{a.metadata.get('tags')} vs {b.metadata.get('tags')}"
            problems.append(f"{zh_path.name}, code cell {number}: tags {tags}")
    return problems


def page_code_differences(en_text: str, zh_text: str, zh_name: str) -> list[str]:
    """Where the ```python snippets of two lesson pages differ: their number, or their code (as
    ``code_differences`` sees it). Empty when the Chinese page runs exactly the English one's snippets."""
    blocks_en, blocks_zh = python_blocks(en_text), python_blocks(zh_text)
    if len(blocks_en) != len(blocks_zh):
        return [f"not the same number of Python snippets: {zh_name} {len(blocks_zh)}, {len(blocks_en)}"]
    problems = []
    for number, (a, b) in enumerate(zip(blocks_en, blocks_zh, strict=True), 1):
        problems += code_differences(a, b, f"{zh_name}, snippet {number}")
    return problems


def python_blocks(text: str) -> list[str]:
    """The bodies of a Markdown page's ```python fenced blocks, in order."""
    return [body for lang, body in FENCE.findall(text) if lang == "python"]


def page_skip_reason(en_page: Path, zh_page: Path) -> str | None:
    """Why the lesson-snippet test may skip the Chinese page ``zh_page``, or None: its snippets are
    ``en_page``'s code (the English page runs it) and `RUN_ALL` is not set. CI runs both, and so checks the
    Chinese page's marked output blocks too."""
    if os.environ.get(RUN_ALL) == "1" or not zh_page.exists() or not en_page.exists():
        return None
    en, zh = en_page.read_text(encoding="utf-8"), zh_page.read_text(encoding="utf-8")
    if page_code_differences(en, zh, zh_page.name):
        return None
    return same_code_reason(zh_page.name, "snippets", en_page.name)


def same_code_reason(twin: str, what: str, english: str) -> str:
    """The skip reason of a Chinese twin that runs its English page's or notebook's code."""
    same = f"{twin} runs the same {what} as {english} (tests/test_parity.py)"
    return f"{same}; {RUN_ALL}=1 runs it too, as CI does"
