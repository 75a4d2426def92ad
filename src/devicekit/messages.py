"""devicekit's message layer: every text it raises, warns or prints exists in English and Chinese.

A `Message` holds both texts and shows the one `devicekit.lang.current_language` asks for each time it is
turned into a string (both, English first, when the language is unknown). So an error raised in a script
and printed later in a Chinese notebook reads in Chinese, and the same object still answers `.en` and
`.zh`.

* `localised` builds an exception of any class from a `Message`; the
  exception carries `.en` and `.zh`, and `str(exc)` follows the current language.
* `warn` issues a warning the same way.
* `join` lists items with ", " in English and "、" in Chinese.

Chinese text follows the course's typography: full-width （）：，、 and no space before them.
"""

from __future__ import annotations

import warnings
from collections.abc import Iterable
from dataclasses import dataclass

from devicekit.lang import Lang, pick

TYPE_CHECKING = False  # `typing` is not imported at run time (the linter's start-up)
if TYPE_CHECKING:
    from typing import TypeVar

    E = TypeVar("E", bound=BaseException)

__all__ = ["LocalisedError", "Message", "Text", "as_message", "join", "localised", "warn"]


@dataclass(frozen=True)
class Message:
    """One text in English and Chinese; `str()` gives the current language's (both when unknown).

    Attributes:
        en: the English text.
        zh: the Chinese text.
    """

    en: str
    zh: str

    def __post_init__(self) -> None:
        if not isinstance(self.en, str) or not isinstance(self.zh, str):
            kinds = f"{type(self.en).__name__}, {type(self.zh).__name__}"
            raise localised(
                TypeError,
                Message(
                    f"Message needs two str texts, got {kinds}",
                    f"Message 需要两个 str 文本，收到的是 {kinds}",
                ),
            )

    def __str__(self) -> str:
        return pick(self.en, self.zh)

    def text(self, lang: Lang | None = None) -> str:
        """The text in `lang` (``"en"``/``"zh"``); `None` means the current language."""
        return pick(self.en, self.zh, lang)

    def __add__(self, other: Message) -> Message:
        if not isinstance(other, Message):
            return NotImplemented
        return Message(self.en + other.en, self.zh + other.zh)


class Text(str):
    """A `str` in the language current when it was made (both when unknown), that keeps `.en` and `.zh`.

    For data fields that code reads as strings (``report.warnings[0]``, ``finding.fix``): ``in``,
    slicing and formatting work as on any `str`, and a report's `__str__` can still use the language
    current when it is printed.
    """

    en: str
    zh: str

    def __new__(cls, message: Message) -> Text:
        obj = super().__new__(cls, str(message))
        obj.en = message.en
        obj.zh = message.zh
        return obj

    def __reduce__(self) -> tuple[object, ...]:
        # the text keeps the language it was made in, also after a round trip through pickle
        return (_restore_text, (str.__str__(self), self.en, self.zh))

    @property
    def message(self) -> Message:
        """The `Message` behind this text."""
        return Message(self.en, self.zh)


def _restore_text(value: str, en: str, zh: str) -> Text:
    text = str.__new__(Text, value)
    text.en, text.zh = en, zh
    return text


def as_message(value: Message | str) -> Message:
    """`value` as a `Message`; a plain `str` (from code outside devicekit) is used for both languages."""
    if isinstance(value, Message):
        return value
    if isinstance(value, Text):
        return value.message
    if isinstance(value, str):
        return Message(value, value)
    kind = type(value).__name__
    raise localised(
        TypeError,
        Message(
            f"a message is a devicekit Message or a str, not {kind}",
            f"消息必须是 devicekit 的 Message 或 str，而不是 {kind}",
        ),
    )


def join(items: Iterable[object]) -> Message:
    """The items listed: ``"a, b"`` in English, ``"a、b"`` in Chinese."""
    texts = [str(i) for i in items]
    return Message(", ".join(texts), "、".join(texts))


def localised(exc_type: type[E], message: Message) -> E:
    """An exception of `exc_type` whose text is `message`: it has `.en` and `.zh`; `str()` follows the
    language.

    The exception's class is `exc_type` itself (a plain `TypeError` stays a `TypeError`), so `except`
    clauses and `pytest.raises` work as before; its only argument is the `Message`.
    """
    exc = exc_type(message)
    exc.en = message.en  # type: ignore[attr-defined]
    exc.zh = message.zh  # type: ignore[attr-defined]
    return exc


def warn(message: Message, category: type[Warning] = UserWarning, stacklevel: int = 2) -> None:
    """`warnings.warn` with a `Message`: the warning carries `.en` and `.zh` and reads in the current
    language.

    `stacklevel` is what the caller would pass to `warnings.warn` itself (2: the caller's caller).
    """
    # The argument is a str (a `Text`, fixed in the language current now): warning filters and pytest
    # expect a str there.
    warning = category(Text(message))
    warning.en = message.en  # type: ignore[attr-defined]
    warning.zh = message.zh  # type: ignore[attr-defined]
    warnings.warn(warning, stacklevel=stacklevel + 1)


class LocalisedError(Exception):
    """Mixin of devicekit's own exceptions: built from a `Message` (or a str), with `.en` and `.zh`.

    `str(exc)` gives the current language's text, as for `localised`.
    """

    def __init__(self, message: Message | str = "", *args: object) -> None:
        msg = as_message(message)
        super().__init__(msg, *args)
        self.en = msg.en
        self.zh = msg.zh

    @property
    def message(self) -> Message:
        """The `Message` this exception was built from."""
        return Message(self.en, self.zh)

    def __str__(self) -> str:
        return pick(self.en, self.zh)
