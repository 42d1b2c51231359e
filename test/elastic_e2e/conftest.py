import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
# test/support: shared helpers (memory_cgroup.py)
sys.path.insert(1, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "support"))
