"""`make dist`: one reproducible zip per lab with the student notebooks only."""

from __future__ import annotations

import zipfile

import dist
from _paths import LABS


def test_one_zip_per_lab_with_student_notebooks(tmp_path):
    first = dist.build(tmp_path / "a")
    again = dist.build(tmp_path / "b")
    assert [p.name for p in first] == ["01-devices.zip"]
    assert first[0].read_bytes() == again[0].read_bytes(), "zips must be reproducible"
    with zipfile.ZipFile(first[0]) as zf:
        names = zf.namelist()
        assert names == [
            "01-devices/README.txt",
            "01-devices/01-devices.ipynb",
            "01-devices/01-devices.zh.ipynb",
        ]
        assert zf.read("01-devices/01-devices.ipynb") == (LABS / "01-devices.ipynb").read_bytes()
        assert b"BEGIN SOLUTION" not in zf.read("01-devices/01-devices.zh.ipynb")
        readme = zf.read("01-devices/README.txt").decode()
        assert "Lab 1" in readme and "实验 1" in readme
