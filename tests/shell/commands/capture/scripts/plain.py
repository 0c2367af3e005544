"""A training stand-in without TensorFlow: prints numbered lines, then ends as asked.

plain.py LINES [exit N | kill SIGNAL | wait]   (wait: print 'ready' and sleep until SIGINT arrives)
"""

import os
import signal
import sys
import time

for n in range(int(sys.argv[1])):
    print(f"training line {n}", flush=True)
how = sys.argv[2] if len(sys.argv) > 2 else "exit"
if how == "exit":
    sys.exit(int(sys.argv[3]) if len(sys.argv) > 3 else 0)
if how == "kill":
    os.kill(os.getpid(), getattr(signal, sys.argv[3]))
if how == "wait":
    try:
        print("ready", flush=True)
        while True:
            time.sleep(0.05)
    except KeyboardInterrupt:
        print("child got SIGINT", flush=True)
        sys.exit(1)
