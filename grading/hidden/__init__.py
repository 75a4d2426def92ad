"""The grader's hidden tier: extra judges that need an answer key, kept out of the wheel students install.

``src/devicekit_labs/`` ships to students, so its public judges check only what an exercise states (device,
dtype, values computed from the planted inputs by simple rules, identity facts the probe records) and hold no
answer key (a drill's public judge keeps one salted digest per letter, see `devicekit_labs.drills`). This
folder is at the repository root and is not packaged (``pyproject.toml`` packages devicekit,
devicekit_labs and devicekit_grade only).

One module per lab, ``labNN.py``, each defining ``HIDDEN = {exercise_key: judge}``. A hidden judge takes
the SAME observations as the exercise's public judge (the dict its probe returned, after it crossed from the
sandboxed kernel as ``torch.save`` bytes) and raises ``devicekit_labs.Fail`` (English and Chinese hint) when
the answer is wrong; it never receives or runs learner code. The grader (``devicekit-grade --hidden DIR``,
default ``./grading/hidden``) runs it after the public judge has passed. A hidden judge must accept every
right answer in ``tests/mutations/labNN.py``: ``tests/test_mutations.py`` runs it on their observations.

What lives here: the drills' answers in plain text, grounded in PyTorch by the tests (the operations are
run, and ``results/cuda-messages.json`` records them on CUDA), and grading-only checks against a reference
computation.
"""
