"""`make dist`: one reproducible zip per lab: the student notebooks, devicekit's wheel (the setup cell
installs it offline), and bilingual instructions with the pinned version. The wheel really installs
into a fresh environment without an index."""

from __future__ import annotations

import os
import subprocess
import sys
import sysconfig
import venv
import zipfile

import pytest

from course_tools import course
from course_tools.generate import dist
from course_tools.paths import LABS, ROOT

pytestmark = pytest.mark.integration  # builds wheels and zips, installs into a fresh environment


@pytest.fixture(scope="module")
def zips(tmp_path_factory):
    if any(not (LABS / f"{lab.id}{sfx}.ipynb").exists() for lab in course.labs(ROOT) for sfx in ("", ".zh")):
        pytest.skip("a lab is not generated yet: run `make labs`")
    first = dist.build(tmp_path_factory.mktemp("a"))
    again = dist.build(tmp_path_factory.mktemp("b"))
    return first, again


def test_one_reproducible_zip_per_lab(zips):
    first, again = zips
    assert [p.name for p in first] == [f"{lab.id}.zip" for lab in course.labs(ROOT)]
    assert [p.read_bytes() for p in first] == [p.read_bytes() for p in again], "zips must be reproducible"


def test_each_zip_holds_the_student_notebooks_the_wheel_and_instructions(zips):
    version = dist.version()
    for path in zips[0]:
        lab = path.stem
        with zipfile.ZipFile(path) as zf:
            names = zf.namelist()
            wheel = f"{lab}/devicekit-{version}-py3-none-any.whl"
            assert names == [f"{lab}/README.txt", f"{lab}/{lab}.ipynb", f"{lab}/{lab}.zh.ipynb", wheel]
            for name in (f"{lab}/{lab}.ipynb", f"{lab}/{lab}.zh.ipynb"):
                text = zf.read(name).decode()
                assert dist.repo_url() not in text, f"{name} links to the repository that holds solutions"
                empty = 'INSTALL_FROM = \\"\\"'  # as the notebook's JSON text writes it
                assert empty in text, "with no students repository, install from the wheel only"
            assert b"BEGIN SOLUTION" not in zf.read(f"{lab}/{lab}.zh.ipynb")
            readme = zf.read(f"{lab}/README.txt").decode()
            for words in (
                "Restart",
                "重启内核并运行所有单元格",
                f"{lab}-YOURNAME.ipynb",
                f"devicekit {version}",
            ):
                assert words in readme


def test_the_wheel_installs_offline_into_a_fresh_environment(zips, tmp_path):
    path = zips[0][0]
    with zipfile.ZipFile(path) as zf:
        name = next(n for n in zf.namelist() if n.endswith(".whl"))
        wheel = tmp_path / name.rsplit("/", 1)[1]
        wheel.write_bytes(zf.read(name))
    env_dir = tmp_path / "fresh"
    venv.EnvBuilder(with_pip=False).create(env_dir)
    python = env_dir / "bin" / "python"
    if not python.exists():
        pytest.skip("venv layout of this platform")
    done = subprocess.run(
        [sys.executable, "-m", "pip", "--python", str(python), "install", "--no-index", "--no-deps",
         str(wheel)],
        capture_output=True, text=True, env={**os.environ, "PIP_NO_INDEX": "1"},
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-2000:]
    # torch from the course environment, appended after the fresh environment's own packages
    fresh_site = subprocess.run(
        [str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
        capture_output=True,
        text=True,
    ).stdout.strip()
    with open(os.path.join(fresh_site, "course_torch.pth"), "w") as handle:
        handle.write(sysconfig.get_paths()["purelib"] + "\n")
    code = (
        "import devicekit; from devicekit_labs import run; "
        "print(devicekit.__version__, devicekit.__file__); "
        "print(run('01-devices', 'predict-raises', {'a': False, 'b': True, 'c': False, 'd': True}).passed)"
    )
    done = subprocess.run([str(python), "-c", code], capture_output=True, text=True, cwd=tmp_path)
    assert done.returncode == 0, done.stderr[-2000:]
    version, location = done.stdout.split("\n")[0].split(" ", 1)
    assert version == dist.version() and str(env_dir) in location, (
        "installed from the wheel, not the checkout"
    )
    assert done.stdout.split("\n")[1] == "True"


def test_zips_link_to_the_students_repository_when_one_is_set(tmp_path):
    if not (LABS / "01-devices.ipynb").exists():
        pytest.skip("labs not generated")
    students = "https://github.com/example/course-for-students"
    (first, *_) = dist.build(tmp_path, students=students)
    with zipfile.ZipFile(first) as zf:
        text = zf.read(f"{first.stem}/{first.stem}.ipynb").decode()
    assert f"devicekit @ git+{students}" in text and dist.repo_url() not in text


def test_a_students_notebook_keeps_its_text_apart_from_the_links():
    """Only the links change: the install line, <url> links and [text](url) links; nothing else."""
    import json

    from course_tools.generate.students import for_students

    repo = dist.repo_url()
    original = (LABS / "01-devices.ipynb").read_text(encoding="utf-8")
    assert f"devicekit @ git+{repo}" in original and f"<{repo}/blob/" in original
    plain = json.loads(for_students(original, repo, None))
    source = json.loads(original)
    assert repo not in json.dumps(plain)
    setup = "".join(plain["cells"][2]["source"])
    assert 'INSTALL_FROM = ""' in setup and "([[INSTALL_FROM]] if INSTALL_FROM else [])" in setup
    assert [c["cell_type"] for c in plain["cells"]] == [c["cell_type"] for c in source["cells"]]
    untouched = [i for i, c in enumerate(source["cells"]) if repo not in json.dumps(c)]
    assert untouched and all(plain["cells"][i] == source["cells"][i] for i in untouched), "only links change"
    moved = for_students(original, repo, "https://gitee.com/s/r")
    assert "devicekit @ git+https://gitee.com/s/r" in moved and repo not in moved


def test_a_students_page_gets_the_same_links_as_its_notebook():
    """The page of a lab (HTML) follows the notebook's rule: an empty install string, a GitHub link written
    as its URL becomes the file's name, a link with its own text keeps the text; no path of the repository
    is left as a link on the site (it would 404)."""
    from course_tools.generate.students import page_for_students

    repo = dist.repo_url()
    page = (
        '<span class="s2">"devicekit @ git+' + repo + '"</span>\n'
        f'<p>the lesson is at <a href="{repo}/blob/main/docs/lessons/01-devices.md">'
        f"{repo}/blob/main/docs/lessons/01-devices.md</a>, "
        f'and <a href="{repo}/tree/main/labs">the labs</a>.</p>'
        f'<a href="{repo}" class="md-source">repo</a>'
    )
    plain = page_for_students(page, repo, None)
    assert '<span class="s2">""</span>' in plain
    assert "the lesson is at <code>docs/lessons/01-devices.md</code>, and the labs." in plain
    assert repo not in plain and "/blob/" not in plain and "/tree/" not in plain
    moved = page_for_students(page, repo, "https://gitee.com/s/r")
    assert "devicekit @ git+https://gitee.com/s/r" in moved and repo not in moved
    assert 'href="https://gitee.com/s/r/blob/main/docs/lessons/01-devices.md"' in moved
    assert page_for_students(page, "", None) == page
