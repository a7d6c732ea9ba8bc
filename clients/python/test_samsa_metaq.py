"""Tests of samsa_metaq against `samsa dev` (SAMSA_BIN, default
bin/samsa from the repository root). Run: python3 -m unittest discover -s
clients/python."""

import os
import re
import subprocess
import sys
import tempfile
import time
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import samsa_metaq as mq  # noqa: E402

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
BIN = os.environ.get("SAMSA_BIN", os.path.join(ROOT, "bin", "samsa"))


def start_dev(*extra):
    proc = subprocess.Popen([BIN, "dev", "--namesrv", "127.0.0.1:0", "--port", "0"] + list(extra),
                            stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    deadline = time.time() + 60
    while time.time() < deadline:
        line = proc.stdout.readline()
        if not line:
            break
        m = re.search(r"broker (\S+):(\d+) ", line)
        if m:
            return proc, m.group(1), int(m.group(2))
    proc.kill()
    raise RuntimeError("samsa dev did not start")


def stop_dev(proc):
    proc.terminate()
    proc.wait(timeout=60)
    proc.stdout.close()


@unittest.skipUnless(os.path.exists(BIN), "no samsa binary at %s (run make build)" % BIN)
class MetaQClientTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.proc, cls.host, cls.port = start_dev()

    @classmethod
    def tearDownClass(cls):
        stop_dev(cls.proc)

    def poll_until(self, consumer, n):
        got, deadline = [], time.time() + 30
        while len(got) < n and time.time() < deadline:
            msgs = consumer.poll()
            got.extend(msgs)
            if not msgs:
                time.sleep(0.01)  # the broker indexes a put just after answering it
        return got

    def test_produce_consume_resume(self):
        p = mq.Producer(self.host, self.port)
        sent = [b"first", b"\x00\x01binary\r\n", b"x" * 5000]
        offsets = [p.send("pytopic", v, partition=0)[2] for v in sent]
        p.send("pytopic", b"with attribute", partition=0, attribute="k=v")
        p.close()
        self.assertEqual(offsets, [0, 25, 25 + 30])

        with tempfile.TemporaryDirectory() as d:
            path = os.path.join(d, "offset")
            c = mq.PullConsumer(self.host, self.port, "pytopic", "g", 0, path, max_size=64)
            got = self.poll_until(c, 2)
            c.close()
            self.assertEqual([m.payload for m in got[:2]], sent[:2])
            # A new consumer resumes from the saved offset.
            c = mq.PullConsumer(self.host, self.port, "pytopic", "g", 0, path)
            self.assertEqual(c.offset, got[-1].offset + got[-1].length)
            rest = self.poll_until(c, 4 - len(got))
            c.close()
            allmsgs = got + rest
            self.assertEqual([m.payload for m in allmsgs], sent + [b"with attribute"])
            self.assertEqual(allmsgs[3].attribute, b"k=v")

    def test_moved_offset(self):
        p = mq.Producer(self.host, self.port)
        p.send("pymoved", b"only", partition=0)
        p.close()
        with tempfile.TemporaryDirectory() as d:
            path = os.path.join(d, "offset")
            with open(path, "w") as f:
                f.write("1000")
            c = mq.PullConsumer(self.host, self.port, "pymoved", "g", 0, path)
            c.poll()
            self.assertEqual(c.offset, 24)  # moved back to the end
            c.close()

    def test_refusals(self):
        with mq.Connection(self.host, self.port) as conn:
            kind, code, body = conn.request("put pybad 0 3 0 12345", b"abc")
            self.assertEqual(code, 500)
            self.assertIn(b"Checksum", body)
            kind, code, body = conn.request("get pybad g 0 0 0")
            self.assertEqual(code, 400)
            kind, code, body = conn.request("version")
            self.assertEqual((kind, code), ("result", 200))


@unittest.skipUnless(os.path.exists(BIN), "no samsa binary at %s (run make build)" % BIN)
class MetaQRestartTest(unittest.TestCase):
    """100 MB put through the client come back byte-identical from get
    after the broker restarts on the same data directory."""

    def test_100mb_across_restart(self):
        import hashlib
        size, count = 64 * 1024, 1600  # 100 MiB in 64 KiB messages
        want = hashlib.sha256()
        with tempfile.TemporaryDirectory() as d:
            data = os.path.join(d, "data")
            proc, host, port = start_dev("--dir", data)
            try:
                p = mq.Producer(host, port)
                for i in range(count):
                    v = hashlib.sha256(b"%d" % i).digest() * (size // 32)
                    want.update(v)
                    p.send("pybig", v, partition=0)
                p.close()
            finally:
                stop_dev(proc)
            proc, host, port = start_dev("--dir", data)
            try:
                got, n = hashlib.sha256(), 0
                c = mq.PullConsumer(host, port, "pybig", "g", 0, os.path.join(d, "offset"), max_size=1 << 20)
                deadline = time.time() + 120
                while n < count and time.time() < deadline:
                    msgs = c.poll()
                    for m in msgs:
                        got.update(m.payload)
                    n += len(msgs)
                    if not msgs:
                        time.sleep(0.01)
                c.close()
            finally:
                stop_dev(proc)
        self.assertEqual(n, count)
        self.assertEqual(got.hexdigest(), want.hexdigest())


if __name__ == "__main__":
    unittest.main()
