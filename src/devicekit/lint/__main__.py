"""`python -m devicekit.lint PATH...`."""

from devicekit.lint.cli import console

if __name__ == "__main__":
    console()
