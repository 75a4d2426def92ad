"""MkDocs hooks for the error atlas and the explainer widget (content in ``course_tools/generate/atlas.py``).

- ``<!-- atlas -->`` in a page (``docs/atlas.md``, ``docs/atlas.zh.md``) becomes the atlas generated from
  devicekit's error catalog, in the page's language (``page.file.locale``, set by mkdocs-static-i18n).
- ``assets/devicekit-catalog.json``, the catalog subset the widget (``docs/assets/explainer.js``) matches
  against, is added to the build as a generated file. It is added *after* i18n rebuilt the file list
  (i18n's ``on_files`` runs at priority -100 and cannot handle generated files). i18n builds every
  language into the same ``site_dir`` and writes shared assets once at the site root (``site/assets``,
  no ``site/zh/assets``); the Chinese pages load ``../assets/explainer.js`` from there and the widget
  fetches the JSON next to the script, so one file serves both languages.
"""

from __future__ import annotations

import sys
from pathlib import Path

from mkdocs.plugins import event_priority
from mkdocs.structure.files import File

from course_tools.generate import atlas

PLACEHOLDER = "<!-- atlas -->"


def on_page_markdown(markdown, page, config, files):
    if PLACEHOLDER not in markdown:
        return markdown
    lang = getattr(page.file, "locale", None) or "en"
    return markdown.replace(PLACEHOLDER, atlas.atlas_markdown(lang, docs_dir=Path(config.docs_dir)))


@event_priority(-110)  # after mkdocs-static-i18n's on_files (-100), which rebuilds every File
def on_files(files, config):
    existing = files.get_file_from_path(atlas.WIDGET_JSON_PATH)
    if existing is not None:
        files.remove(existing)
    files.append(File.generated(config, atlas.WIDGET_JSON_PATH, content=atlas.widget_json()))
    return files
