"""``python -m devicekit_grade``: the same as the ``devicekit-grade`` command (see `devicekit_grade.cli`)."""

import sys

from devicekit_grade.cli import entry

if __name__ == "__main__":
    sys.exit(entry())
