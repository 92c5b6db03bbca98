#!/usr/bin/env python3
"""Runs a moto S3 server on 127.0.0.1 for one test process.

Prints "READY <endpoint> <bucket> <log>" once the server answers and the bucket exists, then
waits for EOF on stdin and stops the server. The test process holds our stdin open for its whole
life, so the server dies with it even when the tests panic or are killed.

Exit code 3 means moto is not installed (run scripts/install-deps.sh).
"""
import argparse
import os
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request


def free_port():
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def answers(endpoint):
    try:
        urllib.request.urlopen(endpoint + "/", timeout=1).read()
        return True
    except urllib.error.HTTPError:
        return True  # any HTTP answer means the server is up
    except (urllib.error.URLError, OSError):
        return False


def die_with_parent():
    # Linux: if this script is SIGKILLed, the kernel stops moto too instead of orphaning it.
    try:
        import ctypes

        ctypes.CDLL("libc.so.6", use_errno=True).prctl(1, signal.SIGTERM)  # PR_SET_PDEATHSIG
    except (OSError, AttributeError):
        pass


def start(port, log):
    # The free port is picked before moto binds it; a clash makes moto exit and we retry.
    server = subprocess.Popen(
        [sys.executable, "-m", "moto.server", "-H", "127.0.0.1", "-p", str(port)],
        stdin=subprocess.DEVNULL,
        preexec_fn=die_with_parent,
        stdout=log,
        stderr=subprocess.STDOUT,
    )
    endpoint = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        if server.poll() is not None:
            return None, None
        if answers(endpoint):
            return server, endpoint
        time.sleep(0.1)
    server.kill()
    return None, None


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--port", type=int, default=0)
    parser.add_argument("--bucket", default="forst-test")
    args = parser.parse_args()

    try:
        import moto.server  # noqa: F401
    except ImportError as e:
        print(f"ERROR: moto is not installed ({e}); run scripts/install-deps.sh", flush=True)
        sys.exit(3)

    log = tempfile.NamedTemporaryFile(prefix="forst-moto-", suffix=".log", delete=False)
    server = endpoint = None
    for _ in range(5):
        server, endpoint = start(args.port or free_port(), log)
        if server or args.port:
            break
    if not server:
        log.flush()
        print(f"ERROR: moto server did not start; see {log.name}", flush=True)
        sys.exit(1)

    def stop(code=0):
        server.terminate()
        try:
            server.wait(timeout=5)
        except subprocess.TimeoutExpired:
            server.kill()
        if code == 0:
            os.unlink(log.name)  # kept only when something went wrong
        sys.exit(code)

    signal.signal(signal.SIGTERM, lambda *_: stop())
    signal.signal(signal.SIGINT, lambda *_: stop())

    # moto checks no signatures, so a bare PUT creates the bucket without boto3.
    request = urllib.request.Request(f"{endpoint}/{args.bucket}", method="PUT", data=b"")
    try:
        urllib.request.urlopen(request, timeout=10).read()
    except urllib.error.HTTPError as e:
        if e.code != 409:  # 409: the bucket already exists (a reused --port server)
            print(f"ERROR: cannot create bucket {args.bucket}: {e}", flush=True)
            stop(1)

    print(f"READY {endpoint} {args.bucket} {log.name}", flush=True)
    sys.stdin.read()
    stop()


if __name__ == "__main__":
    main()
