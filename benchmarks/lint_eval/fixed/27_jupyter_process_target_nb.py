# Reduced from https://github.com/jupyter/notebook/issues/6258
# Scenario 14; the default rule that should find it: DK214 (fixed twin: no finding expected)
from multiprocessing import Process
import os

from workers import test_it

print("main", os.getpid())
p = Process(target=test_it)
p.start()
