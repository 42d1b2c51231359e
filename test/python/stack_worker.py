"""A rank for the stack-dump tests (test_stack_dump.py, test/elastic_e2e/test_stacks.py):
it says it is up (a file in the directory argv[1] names), then rank 1 waits for "go" there
outside hvd while the others wait in an allreduce that needs it, which checks its sum. Rank 2
has forked a helper (as a DataLoader does), which inherits the dump's handler but must not be
asked: its dump would interleave with its parent's."""
import os, sys, time
import numpy as np
import hvd.numpy as hvd

hvd.init()
run_dir = sys.argv[1]

def forked_helper():
    while not os.path.exists(os.path.join(run_dir, "go")):
        time.sleep(0.02)
    os._exit(0)

def stuck_loading_data():
    while not os.path.exists(os.path.join(run_dir, "go")):
        time.sleep(0.02)

def waiting_in_the_allreduce():
    return hvd.allreduce(np.ones(4), name="grad", op=hvd.Sum)

if hvd.rank() == 2 and os.fork() == 0:
    forked_helper()
open(os.path.join(run_dir, "up.%d" % hvd.rank()), "w").close()
if hvd.rank() == 1:
    stuck_loading_data()
assert waiting_in_the_allreduce().tolist() == [hvd.size()] * 4
print("finished", hvd.rank(), flush=True)
