"""The only channel between a submission's kernel and the grader's evaluator: length-prefixed messages of
plain data, written with `torch.save` and always read back with ``torch.load(weights_only=True)``, which
rebuilds tensors, devices, dtypes, numbers, strings, lists, tuples and dicts and nothing else: no class or
function of the sender's choosing is ever constructed or called on the reading side.

Imported by the kernel (`devicekit_grade._kernel`) and the evaluator (`devicekit_grade._evaluator`), so it
imports nothing but the standard library until a message is encoded (then torch).
"""

from __future__ import annotations

import io
import socket
import struct
import time
from typing import Any

MAX_MESSAGE = 64 * 1024 * 1024
_HEADER = struct.Struct("!Q")


class WireError(Exception):
    """The other side sent something that is not a valid message (or closed the connection)."""


def encode(value: Any) -> bytes:
    import torch

    buffer = io.BytesIO()
    torch.save(value, buffer)
    return buffer.getvalue()


def decode(data: bytes) -> Any:
    import torch

    try:
        return torch.load(io.BytesIO(data), weights_only=True, map_location=None)
    except Exception as exc:  # anything that is not plain data is refused
        raise WireError(f"not plain data: {type(exc).__name__}: {str(exc)[:200]}") from None


def send(sock: socket.socket, value: Any) -> None:
    data = encode(value)
    sock.sendall(_HEADER.pack(len(data)) + data)


def _read(sock: socket.socket, size: int, deadline: float | None = None) -> bytes:
    chunks, left = [], size
    while left:
        if deadline is not None:  # the whole message by then: a sender trickling bytes cannot stretch it
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise TimeoutError("the message did not arrive in time")
            sock.settimeout(remaining)
        chunk = sock.recv(min(left, 1 << 20))
        if not chunk:
            raise WireError("the connection was closed")
        chunks.append(chunk)
        left -= len(chunk)
    return b"".join(chunks)


def receive(sock: socket.socket, deadline: float | None = None) -> Any:
    """The next message; with ``deadline`` (a `time.monotonic` time), `TimeoutError` when all of it has not
    arrived by then."""
    (size,) = _HEADER.unpack(_read(sock, _HEADER.size, deadline))
    if size > MAX_MESSAGE:
        raise WireError(f"a message of {size} bytes, more than the {MAX_MESSAGE} allowed")
    return decode(_read(sock, size, deadline))
