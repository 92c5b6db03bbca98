#!/usr/bin/env python3
"""The soak's driver (started by scripts/soak.sh, which builds and gathers the jars first).

A standalone Flink cluster of separate JVMs (one JobManager, two TaskManagers, Flink's jars from
Maven in lib/, our jar first on the class path as in lib/), the S3 test server (moto) on
127.0.0.1 holding the primary directory, checkpoints and savepoints (Flink's s3.* keys), and the
soak job (scripts/soak/job). For --duration seconds: a TaskManager SIGKILLed and restarted every
--kill-every seconds or so, a rescale by stop-with-savepoint every --rescale-every seconds
(parallelism 2 -> 3 -> 4 -> 3 -> 2 ...), one outage of the S3 server (SIGSTOP for --outage
seconds, then SIGCONT: moto keeps its objects in memory only, so a restart would lose them).
Then a final stop-with-savepoint with --drain (all windows and timers fire, the sinks commit),
and the checks: results exact (check_results.py), bucket objects equal to what the retained
savepoint references, TaskManager RSS over time, ERROR lines of org.forstrs.* classes (those
in the minute after a kill or the outage count as injected). Everything goes to --results:
actions.log, rss.csv, summary.json, the processes' logs.
"""
import argparse
import csv
import ctypes
import datetime
import glob
import json
import os
import random
import re
import signal
import socket
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import bucket as s3bucket  # noqa: E402

BUCKET = "soak"
USERS = 1000
JVM_OPTS = (
    "-XX:+IgnoreUnrecognizedVMOptions --add-exports=java.base/sun.net.util=ALL-UNNAMED"
    " --add-exports=java.rmi/sun.rmi.registry=ALL-UNNAMED"
    " --add-exports=java.security.jgss/sun.security.krb5=ALL-UNNAMED"
    " --add-opens=java.base/java.lang=ALL-UNNAMED --add-opens=java.base/java.net=ALL-UNNAMED"
    " --add-opens=java.base/java.io=ALL-UNNAMED --add-opens=java.base/java.nio=ALL-UNNAMED"
    " --add-opens=java.base/sun.nio.ch=ALL-UNNAMED"
    " --add-opens=java.base/java.lang.reflect=ALL-UNNAMED"
    " --add-opens=java.base/java.text=ALL-UNNAMED --add-opens=java.base/java.time=ALL-UNNAMED"
    " --add-opens=java.base/java.util=ALL-UNNAMED"
    " --add-opens=java.base/java.util.concurrent=ALL-UNNAMED"
    " --add-opens=java.base/java.util.concurrent.atomic=ALL-UNNAMED"
    " --add-opens=java.base/java.util.concurrent.locks=ALL-UNNAMED"
).split()
LOG_LINE = re.compile(r"^(\d{4}-\d\d-\d\d \d\d:\d\d:\d\d),\d+ (\w+)\s+(\S+)")
INJECTED_GRACE_S = 60


def die_with_parent():
    # Linux: a SIGKILLed driver takes its JVMs and moto with it.
    ctypes.CDLL("libc.so.6", use_errno=True).prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Soak:
    def __init__(self, args):
        self.args = args
        self.results = os.path.abspath(args.results)
        self.work = os.path.abspath(args.work)
        self.conf = os.path.join(self.work, "conf")
        self.out = os.path.join(self.work, "out")
        self.logs = os.path.join(self.results, "logs")
        for d in (self.results, self.conf, self.out, self.logs):
            os.makedirs(d, exist_ok=True)
        self.java = os.path.join(os.environ.get("JAVA_HOME", "/usr"), "bin", "java")
        self.classpath = ":".join([args.forst_jar] + sorted(glob.glob(os.path.join(args.lib, "*.jar"))))
        self.actions = open(os.path.join(self.results, "actions.log"), "a", buffering=1)
        self.start = time.monotonic()
        self.processes = {}  # name -> Popen (live ones)
        self.tm_starts = {"tm1": 0, "tm2": 0}
        self.events = []  # (kind, wall start, wall end) of injected faults
        self.counts = {"kills": 0, "rescales": 0, "rescale_failures": 0, "outages": 0, "jobs": []}
        self.savepoints = []
        self.job = None
        self.parallelism = 2
        self.stop_sampling = threading.Event()

    # ---- logging and processes ----

    def log(self, what):
        line = f"{datetime.datetime.now().isoformat(timespec='seconds')} +{self.elapsed():6.0f}s {what}"
        print(line, flush=True)
        self.actions.write(line + "\n")

    def elapsed(self):
        return time.monotonic() - self.start

    def spawn(self, name, cmd, log_name, env=None):
        out = open(os.path.join(self.logs, log_name), "ab")
        p = subprocess.Popen(
            cmd,
            stdin=subprocess.DEVNULL,
            stdout=out,
            stderr=subprocess.STDOUT,
            env={**os.environ, **(env or {})},
            preexec_fn=die_with_parent,
        )
        self.processes[name] = p
        return p

    def stop_all(self):
        self.stop_sampling.set()
        for name, p in list(self.processes.items()):
            if p.poll() is None:
                if name == "moto":
                    os.kill(self.moto_pid, signal.SIGCONT)
                p.terminate()
        deadline = time.monotonic() + 30
        for p in self.processes.values():
            try:
                p.wait(timeout=max(0.1, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                p.kill()

    # ---- S3 server ----

    def start_s3(self):
        p = subprocess.Popen(
            [sys.executable, os.path.join(self.args.repo, "tests/support/s3_server.py"), "--bucket", BUCKET],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
            preexec_fn=die_with_parent,
        )
        self.processes["moto"] = p
        line = p.stdout.readline().split()
        if not line or line[0] != "READY":
            raise SystemExit(f"soak: the S3 server did not start: {line}")
        self.endpoint = line[1]
        # the server script runs moto as its child: that process is what an outage pauses
        with open(f"/proc/{p.pid}/task/{p.pid}/children") as f:
            self.moto_pid = int(f.read().split()[0])
        self.s3 = s3bucket.client(self.endpoint)
        self.log(f"S3 server (moto) at {self.endpoint}, bucket {BUCKET}, pid {self.moto_pid}")

    # ---- configuration and cluster ----

    def write_conf(self):
        self.rest_port = free_port()
        config = {
            "jobmanager.rpc.address": "127.0.0.1",
            "jobmanager.bind-host": "127.0.0.1",
            "jobmanager.rpc.port": free_port(),
            "rest.address": "127.0.0.1",
            "rest.bind-address": "127.0.0.1",
            "rest.port": self.rest_port,
            "blob.server.port": free_port(),
            "taskmanager.host": "127.0.0.1",
            "taskmanager.bind-host": "127.0.0.1",
            "taskmanager.numberOfTaskSlots": 2,
            # slots spread over both TaskManagers, so that every kill hits the job
            "taskmanager.load-balance.mode": "SLOTS",
            "jobmanager.memory.process.size": "1024m",
            "taskmanager.memory.process.size": self.args.tm_process_size,
            "taskmanager.memory.managed.size": self.args.managed_size,
            "heartbeat.interval": 2000,
            "heartbeat.timeout": 15000,
            "restart-strategy.type": "fixed-delay",
            "restart-strategy.fixed-delay.attempts": 1000000,
            "restart-strategy.fixed-delay.delay": "2 s",
            "state.backend.type": "forst",
            "state.backend.forst.primary-dir": "checkpoint-dir",
            # the synchronous operator's DB in the bucket too
            "state.backend.forst.sync.enforce-local": "false",
            "execution.checkpointing.dir": f"s3://{BUCKET}/checkpoints",
            "execution.checkpointing.savepoint-dir": f"s3://{BUCKET}/savepoints",
            "execution.checkpointing.interval": "10 s",
            "execution.checkpointing.timeout": "3 min",
            "execution.checkpointing.incremental": "true",
            "s3.endpoint": self.endpoint,
            "s3.access-key": "soak",
            "s3.secret-key": "soak",
            "s3.path-style-access": "true",
            "s3.region": "us-east-1",
            # AWS extensions S3-compatible servers do not all speak
            "s3.chunked-encoding.enabled": "false",
            "s3.checksum-validation.enabled": "false",
            "env.java.opts.all": " ".join(JVM_OPTS),
        }
        with open(os.path.join(self.conf, "config.yaml"), "w") as f:
            for k, v in config.items():
                f.write(f"{k}: {json.dumps(v) if isinstance(v, str) else v}\n")
        layout = "%d{yyyy-MM-dd HH:mm:ss,SSS} %-5p %-60c %x - %m%n"
        with open(os.path.join(self.conf, "log4j.properties"), "w") as f:
            f.write(
                "rootLogger.level = INFO\n"
                "rootLogger.appenderRef.file.ref = MainAppender\n"
                "appender.main.name = MainAppender\n"
                "appender.main.type = File\n"
                "appender.main.append = true\n"
                "appender.main.fileName = ${sys:log.file}\n"
                "appender.main.layout.type = PatternLayout\n"
                f"appender.main.layout.pattern = {layout}\n"
            )
        with open(os.path.join(self.conf, "log4j-cli.properties"), "w") as f:
            f.write(
                "rootLogger.level = WARN\n"
                "rootLogger.appenderRef.console.ref = ConsoleAppender\n"
                "appender.console.name = ConsoleAppender\n"
                "appender.console.type = CONSOLE\n"
                "appender.console.layout.type = PatternLayout\n"
                f"appender.console.layout.pattern = {layout}\n"
            )

    def env(self):
        return {"FLINK_CONF_DIR": self.conf, "FLINK_PLUGINS_DIR": self.args.plugins}

    def resource_params(self, what):
        """JVM options and dynamic properties as Flink's start scripts compute them."""
        out = subprocess.run(
            [self.java, "-cp", self.classpath, "org.apache.flink.runtime.util.bash.BashJavaUtils",
             what, "--configDir", self.conf],
            capture_output=True, text=True, check=True, env={**os.environ, **self.env()},
        ).stdout
        lines = [l[len("BASH_JAVA_UTILS_EXEC_RESULT:"):] for l in out.splitlines()
                 if l.startswith("BASH_JAVA_UTILS_EXEC_RESULT:")]
        return lines[0].split(), lines[-1].split() if len(lines) > 1 else []

    def start_jobmanager(self):
        jvm, dynamic = self.resource_params("GET_JM_RESOURCE_PARAMS")
        self.spawn(
            "jm",
            [self.java, *jvm, *JVM_OPTS, f"-Dlog.file={self.logs}/jm.log",
             f"-Dlog4j.configurationFile={self.conf}/log4j.properties", "-cp", self.classpath,
             "org.apache.flink.runtime.entrypoint.StandaloneSessionClusterEntrypoint",
             "--configDir", self.conf, *dynamic],
            "jm.out",
            self.env(),
        )
        self.wait_for(lambda: self.rest("/overview") is not None, 120, "the JobManager's REST API")
        self.log(f"JobManager up, REST at 127.0.0.1:{self.rest_port}")

    def start_taskmanager(self, name):
        if not hasattr(self, "tm_params"):
            self.tm_params = self.resource_params("GET_TM_RESOURCE_PARAMS")
        jvm, dynamic = self.tm_params
        self.tm_starts[name] += 1
        n = self.tm_starts[name]
        tmp = os.path.join(self.work, f"{name}-tmp")
        os.makedirs(tmp, exist_ok=True)
        p = self.spawn(
            name,
            [self.java, *jvm, *JVM_OPTS, f"-Dlog.file={self.logs}/{name}-{n}.log",
             f"-Dlog4j.configurationFile={self.conf}/log4j.properties", "-cp", self.classpath,
             "org.apache.flink.runtime.taskexecutor.TaskManagerRunner", "--configDir", self.conf,
             *dynamic, "-D", f"io.tmp.dirs={tmp}", "-D", f"taskmanager.resource-id={name}"],
            f"{name}-{n}.out",
            self.env(),
        )
        return p

    def registered_taskmanagers(self):
        tms = self.rest("/taskmanagers")
        return {t["id"] for t in tms["taskmanagers"]} if tms else set()

    # ---- REST ----

    def rest(self, path, body=None, method=None, timeout=20):
        url = f"http://127.0.0.1:{self.rest_port}{path}"
        data = json.dumps(body).encode() if body is not None else None
        request = urllib.request.Request(
            url, data=data, method=method or ("POST" if data else "GET"),
            headers={"Content-Type": "application/json"})
        try:
            with urllib.request.urlopen(request, timeout=timeout) as r:
                return json.loads(r.read() or b"null")
        except (urllib.error.URLError, OSError, ValueError):
            return None

    def wait_for(self, condition, timeout, what):
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if condition():
                return
            time.sleep(1)
        raise SystemExit(f"soak: timed out after {timeout} s waiting for {what}")

    def job_state(self):
        j = self.rest(f"/jobs/{self.job}")
        return j["state"] if j else None

    def job_running(self):
        """RUNNING with every task running (a job restarting a region stays RUNNING)."""
        j = self.rest(f"/jobs/{self.job}")
        return bool(j) and j["state"] == "RUNNING" and all(
            v["status"] in ("RUNNING", "FINISHED") for v in j["vertices"])

    def completed_checkpoints(self):
        c = self.rest(f"/jobs/{self.job}/checkpoints")
        return c["counts"]["completed"] if c else 0

    # ---- the job ----

    def submit(self, savepoint=None):
        cmd = [self.java, *JVM_OPTS, f"-Dlog4j.configurationFile={self.conf}/log4j-cli.properties",
               "-cp", self.classpath, "org.apache.flink.client.cli.CliFrontend", "run", "-d",
               "-p", str(self.parallelism)]
        if savepoint:
            cmd += ["-s", savepoint]
        cmd += ["-c", "org.forstrs.soak.SoakJob", self.args.job_jar, "--records", str(self.args.records), "--users", str(USERS),
                "--rate", str(self.args.rate), "--out", self.out]
        r = subprocess.run(cmd, capture_output=True, text=True, env={**os.environ, **self.env()},
                           timeout=300)
        m = re.search(r"JobID ([0-9a-f]{32})", r.stdout + r.stderr)
        if r.returncode != 0 or not m:
            raise SystemExit(f"soak: job submission failed ({r.returncode}):\n{r.stdout}\n{r.stderr}")
        self.job = m.group(1)
        self.counts["jobs"].append({"job": self.job, "parallelism": self.parallelism,
                                    "from_savepoint": savepoint})
        self.log(f"submitted job {self.job} at parallelism {self.parallelism}"
                 + (f" from {savepoint}" if savepoint else ""))
        self.wait_for(self.job_running, 300, "the job to run")

    def stop_with_savepoint(self, drain=False):
        """The savepoint's location, or None if Flink could not take it (the job keeps running)."""
        # native: Flink 2.3 takes no canonical savepoint of async state ("Not supported yet")
        trigger = self.rest(f"/jobs/{self.job}/stop", {"drain": drain, "formatType": "NATIVE"})
        if not trigger:
            return None
        deadline = time.monotonic() + 300  # past the checkpoint timeout
        while time.monotonic() < deadline:
            s = self.rest(f"/jobs/{self.job}/savepoints/{trigger['request-id']}")
            if s and s["status"]["id"] == "COMPLETED":
                op = s.get("operation") or {}
                if "location" in op:
                    self.wait_for(lambda: self.job_state() == "FINISHED", 300, "the job to finish")
                    return op["location"]
                self.log(f"stop-with-savepoint failed: {str(op.get('failure-cause', op))[:300]}")
                return None
            time.sleep(2)
        return None

    def record_job_end(self):
        # the JobManager's log has every restart (the REST metric is gone once the job ended)
        with open(os.path.join(self.logs, "jm.log"), errors="replace") as f:
            restarts = sum(f"({self.job}) switched from state RUNNING to RESTARTING" in l for l in f)
        self.counts["jobs"][-1].update(restarts=restarts, checkpoints=self.completed_checkpoints())
        self.counts["restarts"] = sum(j.get("restarts", 0) for j in self.counts["jobs"])

    # ---- faults ----

    def kill_taskmanager(self):
        name = random.choice(["tm1", "tm2"])
        p = self.processes[name]
        p.send_signal(signal.SIGKILL)
        p.wait()
        now = time.time()
        self.counts["kills"] += 1
        self.events.append(("kill", now, now))
        self.log(f"SIGKILL {name} (pid {p.pid}); restarting it")
        self.start_taskmanager(name)

    def rescale(self):
        cycle = [2, 3, 4, 3]
        target = cycle[(cycle.index(self.parallelism) + 1) % len(cycle)] if self.parallelism in cycle else 2
        self.log(f"rescale {self.parallelism} -> {target}: stop-with-savepoint")
        location = self.stop_with_savepoint()
        if not location:
            self.counts["rescale_failures"] += 1
            self.log("stop-with-savepoint did not complete; the job goes on, retrying later")
            return False
        self.record_job_end()
        self.savepoints.append(location)
        self.log(f"savepoint {location}")
        self.parallelism = target
        self.submit(location)
        self.counts["rescales"] += 1
        return True

    def drop_superseded_savepoints(self):
        """Once the current job has a checkpoint of its own, the savepoints before the one it
        started from are deleted, as a user would (restores are NO_CLAIM)."""
        old = self.savepoints[:-1]
        if old and self.completed_checkpoints() > 0:
            for location in old:
                self.delete_savepoint(location)

    def delete_savepoint(self, location):
        prefix = location.split(f"s3://{BUCKET}/", 1)[1].rstrip("/") + "/"
        keys = [k for k, _ in s3bucket.objects(self.s3, BUCKET, prefix)]
        for k in keys:
            self.s3.delete_object(Bucket=BUCKET, Key=k)
        self.savepoints.remove(location)
        self.log(f"deleted superseded savepoint {location} ({len(keys)} objects)")

    def outage(self):
        start = time.time()
        os.kill(self.moto_pid, signal.SIGSTOP)
        self.log(f"S3 outage: moto (pid {self.moto_pid}) stopped for {self.args.outage} s")
        time.sleep(self.args.outage)
        os.kill(self.moto_pid, signal.SIGCONT)
        self.events.append(("outage", start, time.time()))
        self.counts["outages"] += 1
        self.log("S3 outage over: moto continued")

    # ---- RSS ----

    def sample_rss(self):
        path = os.path.join(self.results, "rss.csv")
        with open(path, "w", newline="") as f:
            w = csv.writer(f)
            w.writerow(["elapsed_s", "process", "pid", "rss_mib"])
            while not self.stop_sampling.wait(10):
                for name in ("tm1", "tm2", "jm"):
                    p = self.processes.get(name)
                    try:
                        with open(f"/proc/{p.pid}/status") as s:
                            kb = next(int(l.split()[1]) for l in s if l.startswith("VmRSS:"))
                    except (AttributeError, OSError, StopIteration):
                        continue
                    w.writerow([round(self.elapsed()), name, p.pid, round(kb / 1024, 1)])
                f.flush()

    # ---- the run ----

    def run(self):
        a = self.args
        self.start_s3()
        self.write_conf()
        self.start_jobmanager()
        self.start_taskmanager("tm1")
        self.start_taskmanager("tm2")
        self.wait_for(lambda: len(self.registered_taskmanagers()) == 2, 180, "two TaskManagers")
        self.log("two TaskManagers registered")
        threading.Thread(target=self.sample_rss, daemon=True).start()
        self.submit()
        self.wait_for(lambda: self.completed_checkpoints() > 0, 300, "a first checkpoint")

        chaos_start = time.monotonic()
        end = chaos_start + a.duration
        jitter = lambda every: every * random.uniform(0.75, 1.25)  # noqa: E731
        next_kill = chaos_start + jitter(a.kill_every)
        next_rescale = chaos_start + a.rescale_every
        outage_at = chaos_start + a.duration * a.outage_at
        outage_done = a.outage <= 0
        last_state = "RUNNING"
        while time.monotonic() < end:
            now = time.monotonic()
            state = self.job_state()
            if state != last_state:
                self.log(f"job {self.job} {state}")
                last_state = state
            if state in ("FAILED", "CANCELED", "FINISHED"):
                raise SystemExit(f"soak: the job ended ({state}) during the soak")
            if not outage_done and now >= outage_at:
                self.outage()
                outage_done = True
            elif now >= next_rescale and self.job_running():
                if self.rescale():
                    next_rescale = time.monotonic() + a.rescale_every
                    last_state = "RUNNING"
                else:
                    next_rescale = time.monotonic() + 30
            elif now >= next_kill:
                self.kill_taskmanager()
                next_kill = time.monotonic() + jitter(a.kill_every)
            elif self.savepoints:
                self.drop_superseded_savepoints()
            time.sleep(2)

        self.log("soak over: waiting for the job to run, then the final stop-with-savepoint --drain")
        self.wait_for(lambda: len(self.registered_taskmanagers()) == 2, 180, "two TaskManagers")
        final = None
        for _ in range(10):
            self.wait_for(self.job_running, 600, "the job to run")
            final = self.stop_with_savepoint(drain=True)
            if final:
                break
            time.sleep(10)
        if not final:
            raise SystemExit("soak: the final stop-with-savepoint did not complete")
        self.record_job_end()
        self.savepoints.append(final)
        self.log(f"final savepoint (drained) {final}; job FINISHED")
        self.drop_superseded_savepoints_at_end(final)
        return self.check()

    def drop_superseded_savepoints_at_end(self, final):
        for location in [s for s in self.savepoints if s != final]:
            self.delete_savepoint(location)

    # ---- checks ----

    def check(self):
        summary = {"duration_s": self.args.duration, "counts": self.counts,
                   "managed_memory_per_tm": self.args.managed_size,
                   "tm_process_size": self.args.tm_process_size}
        ok = True

        r = subprocess.run(
            [sys.executable, os.path.join(HERE, "check_results.py"), self.out, str(USERS),
             "--min-records", str(int(self.args.rate * self.args.duration * 0.2))],
            capture_output=True, text=True)
        summary["results"] = json.loads(r.stdout) if r.stdout.strip() else {"error": r.stderr}
        self.log(f"results exact: {summary['results'].get('exact')} "
                 f"({summary['results'].get('records')} records)")
        ok &= r.returncode == 0

        summary["bucket"] = self.check_bucket()
        self.log(f"bucket: {summary['bucket']['objects']} objects, "
                 f"{summary['bucket']['referenced']} referenced by the retained savepoint, "
                 f"{len(summary['bucket']['leaked'])} leaked, "
                 f"{len(summary['bucket']['missing'])} missing")
        ok &= not summary["bucket"]["missing"]
        if os.environ.get("SOAK_STRICT_BUCKET") == "1":
            ok &= not summary["bucket"]["leaked"]

        # What Flink and the backend left, the operator's tool collects: nothing may stay.
        summary["gc"] = self.run_gc()
        summary["bucket_after_gc"] = self.check_bucket()
        self.log(f"after ForStTool gc --delete: {summary['bucket_after_gc']['objects']} objects, "
                 f"{len(summary['bucket_after_gc']['leaked'])} leaked, "
                 f"{len(summary['bucket_after_gc']['missing'])} missing")
        ok &= summary["gc"]["status"] == 0
        ok &= not summary["bucket_after_gc"]["leaked"] and not summary["bucket_after_gc"]["missing"]

        summary["errors"] = self.count_errors()
        self.log(f"ERROR lines of org.forstrs.*: {summary['errors']['total']} "
                 f"({summary['errors']['unexpected']} outside the injected faults)")
        ok &= summary["errors"]["unexpected"] == 0

        summary["rss"] = self.rss_summary()
        for name, s in summary["rss"].items():
            self.log(f"RSS {name}: {s}")
        summary["ok"] = bool(ok)
        with open(os.path.join(self.results, "summary.json"), "w") as f:
            json.dump(summary, f, indent=2)
        self.log(f"summary in {self.results}/summary.json: {'PASS' if ok else 'FAIL'}")
        return ok

    def run_gc(self):
        """The operator's cleanup after the job: ForStTool gc on the checkpoint directory."""
        r = subprocess.run(
            [self.java, "-cp", self.classpath, "org.forstrs.tools.ForStTool", "gc",
             f"s3://{BUCKET}/checkpoints", "--min-age", "0 s", "--delete"],
            capture_output=True, text=True, env={**os.environ, **self.env()})
        with open(os.path.join(self.results, "gc.log"), "w") as f:
            f.write(r.stdout + r.stderr)
        return {"status": r.returncode, "output": r.stdout.splitlines()[:200],
                "errors": r.stderr.splitlines()[-20:]}

    def settled_objects(self):
        """The bucket once the JobManager's asynchronous discarding of the finished job's
        checkpoints is over: listed every 5 s until two listings agree (at most 2 minutes)."""
        previous = None
        deadline = time.monotonic() + 120
        while True:
            objects = dict(s3bucket.objects(self.s3, BUCKET))
            if objects == previous or time.monotonic() > deadline:
                return objects
            previous = objects
            time.sleep(5)

    def check_bucket(self):
        objects = self.settled_objects()
        referenced = {location.split(f"s3://{BUCKET}/", 1)[1].rstrip("/") + "/_metadata"
                      for location in self.savepoints}
        r = subprocess.run(
            [self.java, "-cp", self.classpath, "org.forstrs.tools.ForStTool", "referenced",
             *self.savepoints], capture_output=True, text=True, env={**os.environ, **self.env()})
        if r.returncode != 0:
            raise SystemExit(f"soak: reading the savepoint's _metadata failed:\n{r.stdout}{r.stderr}")
        # authority (the bucket) and path
        referenced |= {line.split("/", 1)[1] for line in r.stdout.splitlines()}
        # directory markers (empty keys ending in /) are not files
        files = {k for k, size in objects.items() if not (k.endswith("/") and size == 0)}
        leaked = sorted(files - referenced)
        by_prefix = {}
        for k in leaked:
            p = "/".join(k.split("/")[:2])
            by_prefix[p] = by_prefix.get(p, 0) + 1
        return {"objects": len(files), "bytes": sum(objects.values()),
                "referenced": len(referenced), "leaked": leaked[:200],
                "leaked_count": len(leaked), "leaked_by_prefix": by_prefix,
                "missing": sorted(referenced - files)}

    def count_errors(self):
        injected = [(s - 5, e + INJECTED_GRACE_S) for _, s, e in self.events]
        total = unexpected = 0
        examples = []
        for path in sorted(glob.glob(os.path.join(self.logs, "*.log"))):
            with open(path, errors="replace") as f:
                for line in f:
                    m = LOG_LINE.match(line)
                    if not m or m.group(2) != "ERROR" or not m.group(3).startswith("org.forstrs"):
                        continue
                    total += 1
                    t = datetime.datetime.strptime(m.group(1), "%Y-%m-%d %H:%M:%S").timestamp()
                    if not any(a <= t <= b for a, b in injected):
                        unexpected += 1
                        if len(examples) < 10:
                            examples.append(f"{os.path.basename(path)}: {line.strip()[:400]}")
        jni = 0
        for path in glob.glob(os.path.join(self.logs, "*.out")):
            with open(path, errors="replace") as f:
                jni += sum("WARNING in native method" in l for l in f)
        return {"total": total, "unexpected": unexpected, "unexpected_examples": examples,
                "jni_warnings": jni}

    def rss_summary(self):
        rows = list(csv.DictReader(open(os.path.join(self.results, "rss.csv"))))
        summary = {}
        for name in ("tm1", "tm2", "jm"):
            values = [(int(r["elapsed_s"]), float(r["rss_mib"])) for r in rows if r["process"] == name]
            if not values:
                continue
            rss = sorted(v for _, v in values)
            # by quarter of the run: does it grow?
            quarters = []
            last = values[-1][0] or 1
            for q in range(4):
                part = [v for t, v in values if q * last / 4 <= t <= (q + 1) * last / 4]
                quarters.append(max(part) if part else None)
            summary[name] = {"samples": len(rss), "min_mib": rss[0],
                             "median_mib": rss[len(rss) // 2], "max_mib": rss[-1],
                             "max_by_quarter_mib": quarters}
        return summary


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--repo", required=True)
    parser.add_argument("--lib", required=True)
    parser.add_argument("--plugins", required=True)
    parser.add_argument("--forst-jar", required=True)
    parser.add_argument("--job-jar", required=True)
    parser.add_argument("--work", required=True)
    parser.add_argument("--results", required=True)
    parser.add_argument("--duration", type=float, default=3600)
    parser.add_argument("--kill-every", type=float, default=60)
    parser.add_argument("--rescale-every", type=float, default=240)
    parser.add_argument("--outage", type=float, default=20)
    parser.add_argument("--outage-at", type=float, default=0.4, help="fraction of the duration")
    parser.add_argument("--rate", type=float, default=200)
    parser.add_argument("--tm-process-size", default="1600m")
    parser.add_argument("--managed-size", default="256m")
    parser.add_argument("--seed", type=int, default=None)
    args = parser.parse_args()
    # far more than the soak reads: the final stop-with-savepoint --drain ends the input
    args.records = int(args.rate * (args.duration + 3600) * 10)
    random.seed(args.seed)
    soak = Soak(args)
    for sig in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
        signal.signal(sig, lambda *_: sys.exit(130))
    try:
        ok = soak.run()
    finally:
        soak.stop_all()
    sys.exit(0 if ok else 1)


if __name__ == "__main__":
    main()
