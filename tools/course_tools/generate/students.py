"""What students get never points at the repository that holds the solutions.

The lab notebooks carry two kinds of links to the course repository (``repo_url`` in ``mkdocs.yml``): the
setup cell's fallback install (``devicekit @ git+<repo>``) and "read the lesson on GitHub" links. In the
lab zips and the students-only site both go to ``COURSE_STUDENTS_REPO_URL`` (a solution-free copy of the
course, see the grading guide) when it is set; otherwise the setup cell installs only from the wheel beside
the notebook and the GitHub links become plain file names. One rule, two forms of the same text:
`for_students` rewrites a notebook's JSON, `page_for_students` a built page (HTML) or the search index.
"""

from __future__ import annotations

import os
import re

STUDENTS_REPO_ENV = "COURSE_STUDENTS_REPO_URL"
#: The setup cell's fallback install, in a notebook's JSON text (where its quotes are escaped: ``\"``).
INSTALL_LINE = re.compile(r'(INSTALL_FROM = )(\\?")devicekit @ git\+[^"\\]*(\\?")')


def students_repo() -> str | None:
    """The solution-free repository students may install from and read, or None."""
    return os.environ.get(STUDENTS_REPO_ENV, "").strip().rstrip("/") or None


def for_students(text: str, repo_url: str, students: str | None) -> str:
    """A lab notebook's JSON text with every link to ``repo_url`` redirected to ``students`` (or removed).

    Works on the notebook's text so the file keeps its exact formatting and its outputs.
    """
    repo = repo_url.rstrip("/")
    if students:
        text = INSTALL_LINE.sub(lambda m: f"{m[1]}{m[2]}devicekit @ git+{students}{m[3]}", text)
        return text.replace(repo, students)
    text = INSTALL_LINE.sub(lambda m: f"{m[1]}{m[2]}{m[3]}", text)
    # <https://github.com/o/r/blob/main/docs/x.md> -> `docs/x.md`; [t](https://github.com/o/r/...) -> t
    link = re.escape(repo) + r"/(?:blob|tree)/[^/\s)>]+/([^\s)>\"]+)"
    text = re.sub(r"<" + link + r">", lambda m: f"`{m.group(1)}`", text)
    text = re.sub(r"\[([^\]\n\[\"]+)\]\(" + link + r"\)", lambda m: m.group(1), text)
    return text.replace(repo, "")


def page_for_students(text: str, repo_url: str, students: str | None) -> str:
    """A built page (HTML) or the search index with the same rewriting as `for_students` gives its notebook.

    With ``students``, every link to ``repo_url`` goes there. Without: the setup cell's install string is
    empty, as in the downloaded notebook (``INSTALL_FROM = ""``: the wheel beside the notebook only), a link
    whose text is its own GitHub URL becomes the file's name in ``<code>``, another link its text, and no
    other mention of the repository is left.
    """
    repo = repo_url.rstrip("/")
    if not repo:
        return text
    install = re.compile(r"devicekit @ git\+" + re.escape(repo) + r"[^\"'\s<&\\]*")
    if students:
        return install.sub(f"devicekit @ git+{students}", text).replace(repo, students)
    text = install.sub("", text)
    url = re.escape(repo) + r"/(?:blob|tree)/[^/\s\"'<>]+/([^\s\"'<>]+)"
    anchor = re.compile(r'<a\s[^>]*href="' + url + r'"[^>]*>(.*?)</a>', re.S)
    text = anchor.sub(lambda m: f"<code>{m[1]}</code>" if repo in m[2] else m[2], text)
    text = re.sub(url, lambda m: m[1], text)  # the search index's plain text
    return text.replace(repo, "")
