"""A job in which rank 1 fails: ``raise`` (an exception), ``die`` (the process ends at once, as if
killed) or ``hang`` (stuck, never joining the collective). Rank 0 waits in an all-reduce; the job must
end, with an error, within seconds."""
from __future__ import annotations

import datetime
import os
import sys
import time

import jitgrad as jg
import jitgrad.distributed as dist

mode = sys.argv[1]
dist.init_process_group(timeout=datetime.timedelta(seconds=float(sys.argv[2])))
if dist.get_rank() == 1:
    if mode == "raise":
        raise ValueError("rank 1 failed on purpose")
    if mode == "die":
        os._exit(3)
    time.sleep(120)
dist.all_reduce(jg.ones(3))
print("rank 0 finished the all-reduce")
