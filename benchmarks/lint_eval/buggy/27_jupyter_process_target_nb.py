# Reduced from https://github.com/jupyter/notebook/issues/6258
# Scenario 14; the default rule that should find it: DK214 (buggy twin)
from multiprocessing import Process
import os
import time


def test_it():
    print("test_it", os.getpid())
    time.sleep(10)


print("main", os.getpid())
p = Process(target=test_it)
p.start()
