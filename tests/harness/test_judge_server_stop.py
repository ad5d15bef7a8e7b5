"""The judge server's SIGTERM (kbh/judge_server.py _Stop): seen even when
it lands while the main thread runs a finalizer, where an exception raised
by a signal handler is printed and dropped."""
import os
import signal
import subprocess
import sys
import time

HARNESS = os.path.join(os.path.dirname(__file__), "..", "..", "gpu", "harness")

# A main thread that spends its time in __del__ (as gc.collect() after a
# request does), until the stop is seen.
PROG = r"""
import socket, sys, time
sys.path.insert(0, sys.argv[1])
from kbh import judge_server as js
listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
stop = js._Stop(listener)

class Slow:
    def __del__(self):
        t = time.monotonic()
        while time.monotonic() - t < 0.02:
            pass

print("ready", flush=True)
while not stop.why():
    Slow()
print(stop.why(), flush=True)
"""


def test_sigterm_in_a_finalizer_stops_the_server():
    p = subprocess.Popen([sys.executable, "-c", PROG, HARNESS], stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE, text=True)
    try:
        assert p.stdout.readline().strip() == "ready"
        time.sleep(0.2)
        p.send_signal(signal.SIGTERM)
        out, err = p.communicate(timeout=60)
    finally:
        p.kill()
    assert p.returncode == 0, err
    assert out.strip() == "signal %d" % signal.SIGTERM
    assert "SystemExit" not in err
