"""``python -m devicekit.grade``: the same as the ``devicekit-grade`` command (see `devicekit.grade.cli`)."""

import sys

from devicekit.grade.cli import main

if __name__ == "__main__":
    sys.exit(main())
