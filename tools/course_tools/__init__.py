"""Build tools of the course, apart from the devicekit library learners install.

- `course_tools.paths`: where everything lives (the repository root is computed here and nowhere else);
- `course_tools.course`: the course model, read from the solution notebooks' metadata, and the manifest;
- `course_tools.site`: the MkDocs hooks (`mkdocs.yml` names them);
- `course_tools.generate`: generators (labs from solutions, lab zips, atlas pages, badges, stand-in table);
- `course_tools.miners`: PyTorch's device messages mined from its wheels, and the catalog's coverage;
- `course_tools/data/`: data the tools and tests read (mined messages, glossary, catalog sources).
"""
