#!/usr/bin/env python3
"""Load-generator comparison: meshbench's load engine beside oha, vegeta and
wrk, against the same server on loopback. Python 3.11 standard library only.

    python3 bench/loadgen/run.py [--meshbench PATH] [--baseline PATH] \
        [--duration 10] [--rates 1000,5000] [--connections 16] \
        [--target nginx|static|both] [--repeat N] [--out FILE.md] \
        [--json FILE.json] [--pin]

See README.md beside this file for what is measured and how to read it.
Every load run is bounded in time; every process it starts is stopped by PID.
All traffic goes to 127.0.0.1.
"""
from __future__ import annotations

import argparse
import http.client
import json
import os
import platform
import re
import select
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parents[1]
TOOLS = Path(os.environ.get("MESHBENCH_TOOLS") or REPO / ".tools")
NGINX_ROOT = "/usr/share/nginx/html"  # Debian's default 615-byte index.html
PAUSE_S = 1.0  # between runs
GRACE_S = 15.0  # a run may overrun its duration by this much before SIGTERM
KILL_AFTER_S = 5.0  # then SIGKILL


def log(msg: str) -> None:
    print(f"[run.py] {msg}", file=sys.stderr, flush=True)


def find_tool(name: str) -> str | None:
    p = TOOLS / "bin" / name
    if p.is_file() and os.access(p, os.X_OK):
        return str(p)
    found = shutil.which(name)
    if found:
        return found
    for d in ("/usr/sbin", "/usr/local/sbin", "/sbin"):
        p = Path(d, name)
        if p.is_file() and os.access(p, os.X_OK):
            return str(p)
    return None


def tool_version(*cmds: list[str]) -> str:
    """First line printed by the first of cmds that exits 0 (wrk -v exits 1:
    the last command's output is taken whatever its exit code)."""
    text = "?"
    for i, cmd in enumerate(cmds):
        try:
            r = subprocess.run(cmd, capture_output=True, text=True, timeout=10)
        except (OSError, subprocess.TimeoutExpired) as e:
            text = f"? ({e.__class__.__name__})"
            continue
        if r.returncode == 0 or i == len(cmds) - 1:
            out = (r.stdout + r.stderr).strip()
            return out.splitlines()[0].strip() if out else "?"
    return text


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_listening(port: int, timeout: float) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=0.5):
                return True
        except OSError:
            time.sleep(0.05)
    return False


def stop_pid(proc: subprocess.Popen, sig: int = signal.SIGTERM, timeout: float = 5.0) -> None:
    """Stops one process we started, by its PID: sig, then SIGKILL."""
    if proc.poll() is not None:
        return
    try:
        os.kill(proc.pid, sig)
    except ProcessLookupError:
        return
    try:
        proc.wait(timeout)
    except subprocess.TimeoutExpired:
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait(timeout)


def affinity(cpus: set[int] | None):
    if not cpus:
        return None
    return lambda: os.sched_setaffinity(0, cpus)


# ---------------------------------------------------------------- targets


class Target:
    name = ""
    port = 0
    proc: subprocess.Popen | None = None

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}/"

    def cpu_s(self) -> float | None:
        """User + system CPU seconds of the server so far: its process and
        its children (nginx's worker), from /proc; None if unreadable."""
        if self.proc is None:
            return None
        total, pids = 0, [self.proc.pid]
        try:
            with open(f"/proc/{self.proc.pid}/task/{self.proc.pid}/children") as f:
                pids += [int(x) for x in f.read().split()]
            for pid in pids:
                with open(f"/proc/{pid}/stat") as f:
                    fields = f.read().rsplit(")", 1)[1].split()
                total += int(fields[11]) + int(fields[12])  # utime, stime
        except (OSError, ValueError, IndexError):
            return None
        return total / os.sysconf("SC_CLK_TCK")

    def stop(self) -> None:
        if self.proc is not None:
            stop_pid(self.proc)
            log(f"{self.name}: stopped pid {self.proc.pid} (exit {self.proc.returncode})")


class Nginx(Target):
    """nginx with a generated config: one worker, keep-alive, no access log."""

    name = "nginx"

    def __init__(self, work: Path, cpus: set[int] | None):
        self.bin = find_tool("nginx")
        if not self.bin:
            raise RuntimeError("nginx not found (run bench/loadgen/install.sh)")
        self.dir = work / "nginx"
        self.dir.mkdir()
        self.port = free_port()
        d = self.dir
        conf = d / "nginx.conf"
        conf.write_text(f"""\
worker_processes 1;
daemon off;
master_process on;
pid {d}/nginx.pid;
error_log {d}/error.log warn;
events {{
    worker_connections 4096;
}}
http {{
    access_log off;
    default_type text/html;
    sendfile on;
    tcp_nopush on;
    keepalive_requests 1000000;
    keepalive_timeout 75s;
    client_body_temp_path {d}/client_body;
    proxy_temp_path {d}/proxy;
    fastcgi_temp_path {d}/fastcgi;
    uwsgi_temp_path {d}/uwsgi;
    scgi_temp_path {d}/scgi;
    server {{
        listen 127.0.0.1:{self.port};
        root {NGINX_ROOT};
        index index.html;
    }}
}}
""")
        cmd = [self.bin, "-p", str(d), "-c", str(conf), "-e", str(d / "error.log")]
        self.cmd = cmd
        self.proc = subprocess.Popen(cmd, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                                     stderr=open(d / "stderr.log", "wb"), preexec_fn=affinity(cpus))
        if not wait_listening(self.port, 10):
            self.stop()
            raise RuntimeError(f"nginx did not listen on {self.port}: "
                               + (d / "stderr.log").read_text(errors="replace")[-500:])
        log(f"nginx: pid {self.proc.pid} listening on 127.0.0.1:{self.port}")


class StaticServer(Target):
    """`meshbench serve static`, which prints `READY static HOST:PORT`."""

    name = "static"

    def __init__(self, meshbench: str, work: Path, cpus: set[int] | None):
        self.cmd = [meshbench, "serve", "static", "--listen", "127.0.0.1:0"]
        err = open(work / "static.stderr.log", "wb")
        self.errpath = work / "static.stderr.log"
        self.proc = subprocess.Popen(self.cmd, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                                     stderr=err, preexec_fn=affinity(cpus))
        line = self._readline(10.0)
        m = re.match(r"READY static (127\.0\.0\.1):(\d+)\s*$", line or "")
        if not m:
            self.stop()
            raise RuntimeError(f"meshbench serve static: no READY line (got {line!r}); stderr: "
                               + self.errpath.read_text(errors="replace")[-500:])
        self.port = int(m.group(2))
        # Keep draining stdout so the server never blocks on a full pipe.
        threading.Thread(target=self._drain, daemon=True).start()
        log(f"static: pid {self.proc.pid} listening on 127.0.0.1:{self.port}")

    def _readline(self, timeout: float) -> str | None:
        fd = self.proc.stdout.fileno()
        buf = b""
        deadline = time.monotonic() + timeout
        while b"\n" not in buf:
            left = deadline - time.monotonic()
            if left <= 0 or not select.select([fd], [], [], left)[0]:
                return buf.decode(errors="replace") or None
            chunk = os.read(fd, 4096)
            if not chunk:
                break
            buf += chunk
        return buf.split(b"\n", 1)[0].decode(errors="replace")

    def _drain(self) -> None:
        try:
            while os.read(self.proc.stdout.fileno(), 65536):
                pass
        except (OSError, ValueError):
            pass


def warm_up(url_port: int, seconds: float = 1.0, rps: int = 200) -> int:
    """1 s of light keep-alive load (about 200 rps, one connection)."""
    n = 0
    conn = http.client.HTTPConnection("127.0.0.1", url_port, timeout=2)
    start = time.monotonic()
    try:
        while time.monotonic() - start < seconds:
            conn.request("GET", "/")
            r = conn.getresponse()
            r.read()
            if r.status != 200:
                raise RuntimeError(f"warm-up got HTTP {r.status}")
            n += 1
            delay = start + n / rps - time.monotonic()
            if delay > 0:
                time.sleep(delay)
    finally:
        conn.close()
    return n


# ---------------------------------------------------------------- measuring


@dataclass
class Result:
    target: str
    mode: str  # "open" (fixed rate) or "closed" (max throughput)
    tool: str
    rate: int | None  # target rate, None for closed loop
    achieved: float | None = None  # requests/s
    requests: int | None = None  # requests that completed (response or error)
    errors: int | None = None  # completed, but not a 2xx (or a transport error)
    p50_ns: float | None = None
    p99_ns: float | None = None
    cpu_ms: float | None = None  # user+sys of the load-generator process
    server_busy: float | None = None  # the server's CPU over the run, in cores (1.0: one core all the time)
    wall_s: float | None = None
    exit_code: int | None = None
    note: str = ""
    cmd: list[str] = field(default_factory=list)
    rep: int = 1  # repetition (--repeat)
    per_1k: float | None = None  # set on a median row: the median of the runs' figures
    runs: int = 1  # runs a median row stands for

    @property
    def cpu_per_1k(self) -> float | None:
        if self.per_1k is not None:
            return self.per_1k
        if self.cpu_ms is None or not self.requests:
            return None
        return self.cpu_ms / (self.requests / 1000)

    @property
    def ok(self) -> bool:
        return self.requests is not None and not self.note.startswith("FAILED")


def run_measured(cmd: list[str], out: Path, err: Path, timeout: float,
                 cpus: set[int] | None) -> tuple[int, float, float, bool]:
    """Runs cmd to completion (stdout->out, stderr->err), bounded by timeout.
    Returns (exit code, user+sys CPU seconds of that process from wait4's
    rusage, wall seconds, timed_out)."""
    with open(out, "wb") as fo, open(err, "wb") as fe:
        t0 = time.monotonic()
        p = subprocess.Popen(cmd, stdin=subprocess.DEVNULL, stdout=fo, stderr=fe,
                             preexec_fn=affinity(cpus))
    lock = threading.Lock()
    state = {"reaped": False, "timed_out": False}

    def signal_child(sig: int) -> None:
        with lock:
            if not state["reaped"]:
                state["timed_out"] = True
                try:
                    os.kill(p.pid, sig)
                except ProcessLookupError:
                    pass

    t_term = threading.Timer(timeout, signal_child, (signal.SIGTERM,))
    t_kill = threading.Timer(timeout + KILL_AFTER_S, signal_child, (signal.SIGKILL,))
    t_term.start()
    t_kill.start()
    try:
        while True:
            try:
                _, status, ru = os.wait4(p.pid, 0)
                break
            except InterruptedError:
                continue
    finally:
        with lock:
            state["reaped"] = True
        t_term.cancel()
        t_kill.cancel()
    wall = time.monotonic() - t0
    p.returncode = os.waitstatus_to_exitcode(status)
    return p.returncode, ru.ru_utime + ru.ru_stime, wall, state["timed_out"]


class Runner:
    def __init__(self, args, work: Path, meshbench: str | None, baseline: str | None = None):
        self.a = args
        self.work = work
        self.mb = meshbench
        self.base = baseline
        self.oha = find_tool("oha")
        self.vegeta = find_tool("vegeta")
        self.wrk = find_tool("wrk")
        self.tool_cpus = {1} if args.pin else None
        self.seq = 0
        self.results: list[Result] = []

    def _paths(self, tool: str) -> tuple[Path, Path]:
        self.seq += 1
        base = self.work / f"{self.seq:03d}-{tool}"
        return base.with_suffix(".out"), base.with_suffix(".err")

    def _exec(self, res: Result, cmd: list[str], timeout: float) -> tuple[Path, Path] | None:
        out, err = self._paths(res.tool)
        res.cmd = cmd
        log(f"{res.target} {res.mode} {res.rate or 'max'}: {' '.join(cmd)}")
        try:
            rc, cpu, wall, timed_out = run_measured(cmd, out, err, timeout, self.tool_cpus)
        except OSError as e:
            res.note = f"FAILED: {e}"
            return None
        res.exit_code, res.cpu_ms, res.wall_s = rc, cpu * 1000, wall
        if timed_out:
            res.note = f"FAILED: killed after {timeout:.0f}s"
            return None
        if rc != 0:
            tail = err.read_text(errors="replace").strip().splitlines()[-1:] or [""]
            res.note = f"FAILED: exit {rc}: {tail[0][:120]}"
            return None
        return out, err

    def run(self, target: Target, mode: str, tool: str, rate: int | None, rep: int = 1) -> Result:
        res = Result(target=target.name, mode=mode, tool=tool, rate=rate, rep=rep)
        s0 = target.cpu_s()
        try:
            getattr(self, "_" + tool.replace("-", "_"))(res, target.url, rate)
        except Exception as e:  # a parse error must not stop the other tools
            res.note = f"FAILED: {e.__class__.__name__}: {e}"[:200]
        s1 = target.cpu_s()
        if s0 is not None and s1 is not None and res.wall_s:
            res.server_busy = (s1 - s0) / res.wall_s
        if not res.ok and not res.note.startswith("FAILED"):
            res.note = "FAILED: " + (res.note or "no result")
        self.results.append(res)
        log(f"  -> {fmt_row(res)}")
        time.sleep(PAUSE_S)
        return res

    # -- meshbench: meshbench load ... --output-format json -o OUT.json URL
    def _meshbench(self, res: Result, url: str, rate: int | None) -> None:
        self._meshbench_bin(self.mb, res, url, rate)

    # -- meshbench-base: the same, with the --baseline binary (before/after)
    def _meshbench_base(self, res: Result, url: str, rate: int | None) -> None:
        self._meshbench_bin(self.base, res, url, rate)

    # -- meshbench-tick1ms: the same with --send-tick 1ms (oha's own send
    # granularity: the CPU goal is judged at equal granularity)
    def _meshbench_tick1ms(self, res: Result, url: str, rate: int | None) -> None:
        self._meshbench_bin(self.mb, res, url, rate, ["--send-tick", "1ms"])

    def _meshbench_bin(self, mb: str | None, res: Result, url: str, rate: int | None,
                       extra: list[str] | None = None) -> None:
        if not mb:
            res.note = "FAILED: no meshbench binary"
            return
        D, C = self.a.duration, self.a.connections
        outjson = self.work / f"mb-{self.seq + 1:03d}.json"
        load = ["--max"] if rate is None else ["--rate", str(rate)]
        # --warmup 0: meshbench's own warm-up (default 1 s) would burn CPU on
        # requests it does not count; the peers have none. The script warms
        # the server up itself.
        cmd = [mb, "load", *load, "--duration", f"{D}s", "--warmup", "0",
               "--connections", str(C), *(extra or []), "--output-format", "json", "-o", str(outjson), url]
        paths = self._exec(res, cmd, D + GRACE_S)
        if not paths:
            return
        text = outjson.read_text() if outjson.exists() else paths[0].read_text()
        parse_meshbench(res, json.loads(text))

    # -- oha: oha --no-tui --output-format json -z Ds [-q R --latency-correction] -c C URL
    def _oha(self, res: Result, url: str, rate: int | None) -> None:
        if not self.oha:
            res.note = "FAILED: oha not installed"
            return
        D, C = self.a.duration, self.a.connections
        cmd = [self.oha, "--no-tui", "--output-format", "json", "-z", f"{D}s", "-c", str(C)]
        if rate is not None:
            cmd += ["-q", str(rate), "--latency-correction"]
        cmd.append(url)
        paths = self._exec(res, cmd, D + GRACE_S)
        if paths:
            parse_oha(res, json.loads(paths[0].read_text()))

    # -- vegeta: vegeta attack ... -output=FILE (measured), then vegeta report (not measured)
    def _vegeta(self, res: Result, url: str, rate: int | None) -> None:
        if not self.vegeta:
            res.note = "FAILED: vegeta not installed"
            return
        assert rate is not None, "vegeta runs open loop only"
        D, C = self.a.duration, self.a.connections
        targets = self.work / "vegeta-targets.txt"
        targets.write_text(f"GET {url}\n")
        binf = self.work / f"vegeta-{self.seq + 1:03d}.bin"
        cmd = [self.vegeta, "attack", f"-rate={rate}/1s", f"-duration={D}s",
               f"-connections={C}", f"-max-connections={C}", f"-workers={C}",
               f"-targets={targets}", f"-output={binf}"]
        if not self._exec(res, cmd, D + GRACE_S + 30):  # vegeta's own timeout is 30 s
            return
        rep = subprocess.run([self.vegeta, "report", "-type=json", str(binf)],
                             capture_output=True, text=True, timeout=60, check=True)
        parse_vegeta(res, json.loads(rep.stdout))

    # -- wrk: wrk -t1 -cC -dDs --latency URL (closed loop only)
    def _wrk(self, res: Result, url: str, rate: int | None) -> None:
        if not self.wrk:
            res.note = "FAILED: wrk not installed"
            return
        assert rate is None, "wrk runs closed loop only"
        D, C = self.a.duration, self.a.connections
        cmd = [self.wrk, "-t1", f"-c{C}", f"-d{D}s", "--latency", url]
        paths = self._exec(res, cmd, D + GRACE_S)
        if paths:
            parse_wrk(res, paths[0].read_text())


# ---------------------------------------------------------------- parsers


def dig(d: dict, *paths: str):
    """First present value among dotted paths."""
    for path in paths:
        cur = d
        for k in path.split("."):
            if not isinstance(cur, dict) or k not in cur:
                break
            cur = cur[k]
        else:
            return cur
    return None


def parse_meshbench(res: Result, j: dict) -> None:
    """schema/load-result.v1.schema.json: counts sent/completed/success/
    dropped/canceled, latency.p50_ns/p99_ns (from the intended send time in
    the open model), first/last_send_unix_ns, duration_ns."""
    schema = j.get("schema")
    notes = []
    if schema != "meshbench.load-result/v1":
        notes.append(f"schema {schema!r}")
    sent, completed = j.get("sent"), j.get("completed")
    success, dropped = j.get("success"), j.get("dropped")
    res.requests = completed if completed is not None else sent
    if res.requests is None:
        raise KeyError(f"no sent/completed in meshbench JSON (keys: {sorted(j)})")
    if success is not None:
        res.errors = res.requests - success
    lat = j.get("latency") or {}
    res.p50_ns, res.p99_ns = lat.get("p50_ns"), lat.get("p99_ns")
    if "rate_per_sec" in j:  # not in schema v1; taken if a later version adds it
        res.achieved = j["rate_per_sec"]
    elif res.rate is not None:
        # Open loop: sent / (last send - first send), as meshbench's own text
        # report and vegeta compute it.
        span = (j.get("last_send_unix_ns", 0) - j.get("first_send_unix_ns", 0)) / 1e9
        res.achieved = sent / span if sent and span > 0 else None
    else:
        # Closed loop: completed per second of the measured window, as wrk and
        # oha report it.
        d = (j.get("duration_ns") or 0) / 1e9
        res.achieved = completed / d if completed is not None and d > 0 else None
    # The latency tail of a busy machine is often the generator's own: its
    # schedule lag (a late send) counts in meshbench's latency, where the
    # peers time from their own (late) timer tick or send.
    lag99 = (j.get("schedule_lag") or {}).get("p99_ns")
    if res.rate is not None and lag99 is not None and res.p99_ns and lag99 > 0.5 * res.p99_ns:
        notes.append(f"own schedule lag p99 {lag99 / 1000:.0f} µs")
    if dropped:
        notes.append(f"dropped {dropped}")
    if j.get("canceled"):
        notes.append(f"canceled {j['canceled']}")
    if sent is not None and completed is not None and sent != completed:
        notes.append(f"sent {sent}")
    if j.get("interrupted"):
        notes.append("interrupted")
    res.note = "; ".join(notes)


def parse_oha(res: Result, j: dict) -> None:
    s = j["summary"]
    codes = j.get("statusCodeDistribution") or {}
    errs = j.get("errorDistribution") or {}
    # Requests cut off at the deadline never completed: left out of the count.
    aborted = sum(v for k, v in errs.items() if "deadline" in k.lower())
    transport = sum(errs.values()) - aborted
    ok = sum(v for k, v in codes.items() if str(k).startswith("2"))
    res.requests = sum(codes.values()) + transport
    res.errors = res.requests - ok
    res.achieved = s.get("requestsPerSec")
    pct = j.get("latencyPercentiles") or {}
    res.p50_ns = pct["p50"] * 1e9 if pct.get("p50") is not None else None
    res.p99_ns = pct["p99"] * 1e9 if pct.get("p99") is not None else None
    if aborted:
        res.note = f"{aborted} in flight at deadline"


def parse_vegeta(res: Result, j: dict) -> None:
    res.requests = j["requests"]
    codes = j.get("status_codes") or {}
    ok = sum(v for k, v in codes.items() if k.startswith("2"))
    res.errors = res.requests - ok
    res.achieved = j["rate"]  # requests / attack duration (first to last request sent)
    lat = j["latencies"]
    res.p50_ns, res.p99_ns = lat["50th"], lat["99th"]
    if j.get("errors"):
        res.note = "; ".join(j["errors"])[:80]


WRK_UNITS = {"ns": 1, "us": 1e3, "ms": 1e6, "s": 1e9, "m": 60e9, "h": 3600e9}


def parse_wrk(res: Result, text: str) -> None:
    m = re.search(r"(\d+) requests in ([\d.]+)(\w+)", text)
    if not m:
        raise ValueError("no 'N requests in' line in wrk output")
    res.requests = int(m.group(1))
    res.achieved = float(re.search(r"Requests/sec:\s+([\d.]+)", text).group(1))
    errs = 0
    if m2 := re.search(r"Non-2xx or 3xx responses:\s+(\d+)", text):
        errs += int(m2.group(1))
    if m3 := re.search(r"Socket errors: connect (\d+), read (\d+), write (\d+), timeout (\d+)", text):
        errs += sum(int(x) for x in m3.groups())
    res.errors = errs
    for pct, val, unit in re.findall(r"^\s+(50|99)%\s+([\d.]+)([a-z]+)", text, re.M):
        ns = float(val) * WRK_UNITS[unit]
        if pct == "50":
            res.p50_ns = ns
        else:
            res.p99_ns = ns


# ---------------------------------------------------------------- report


def f_us(ns) -> str:
    return "n/a" if ns is None else f"{ns / 1000:.1f}"


def f_num(v, spec=",.0f") -> str:
    return "n/a" if v is None else format(v, spec)


def fmt_row(r: Result) -> str:
    return " | ".join([
        r.tool, f_num(r.rate, ",d") if r.rate else "max", f_num(r.achieved, ",.1f"),
        f_num(r.requests, ",d"), f_num(r.errors, ",d"), f_us(r.p50_ns), f_us(r.p99_ns),
        f_num(r.cpu_ms, ",.0f") if r.ok else "n/a", f_num(r.cpu_per_1k, ".2f") if r.ok else "n/a",
        f_num(None if r.server_busy is None else r.server_busy * 100, ".0f"), r.note.replace("|", "/")])


HEADER = ("| tool | target rate | achieved rate/s | requests | errors | p50 µs | p99 µs "
          "| CPU ms | CPU ms/1000 req | server % of a core | notes |\n"
          "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|")


def tables(results: list[Result]) -> str:
    out = []
    for target in dict.fromkeys(r.target for r in results):
        for mode, title in (("open", "open loop, fixed rate"), ("closed", "closed loop, max throughput")):
            rows = [r for r in results if r.target == target and r.mode == mode]
            if not rows:
                continue
            out += [f"### {target}: {title}", "", HEADER]
            out += [f"| {fmt_row(r)} |" for r in rows]
            out.append("")
    return "\n".join(out)


def medians(results: list[Result]) -> list[Result]:
    """One row per (target, mode, tool, rate): the median of each figure
    over its successful runs (--repeat), the CPU per 1000 requests as the
    median of the runs' own; a group without a successful run keeps its
    first failure."""
    groups: dict[tuple, list[Result]] = {}
    for r in results:
        groups.setdefault((r.target, r.mode, r.tool, r.rate), []).append(r)
    out = []
    for (target, mode, tool, rate), rs in groups.items():
        ok = [r for r in rs if r.ok]
        if len(rs) == 1 or not ok:
            out.append(rs[0])
            continue

        def med(get):
            vals = [get(r) for r in ok if get(r) is not None]
            return statistics.median(vals) if vals else None

        per1k = [r.cpu_per_1k for r in ok if r.cpu_per_1k is not None]
        notes = [f"median of {len(ok)}"]
        if per1k:
            notes[0] += f"; CPU/1000 {min(per1k):.1f}–{max(per1k):.1f}"
        if len(ok) < len(rs):
            notes.append(f"{len(rs) - len(ok)} failed")
        notes += collapse_lag_notes(r.note for r in ok if r.note)
        reqs = med(lambda r: r.requests)
        out.append(Result(target=target, mode=mode, tool=tool, rate=rate, achieved=med(lambda r: r.achieved),
                          requests=None if reqs is None else int(reqs), errors=max(r.errors or 0 for r in ok),
                          p50_ns=med(lambda r: r.p50_ns), p99_ns=med(lambda r: r.p99_ns),
                          cpu_ms=med(lambda r: r.cpu_ms), per_1k=statistics.median(per1k) if per1k else None,
                          server_busy=med(lambda r: r.server_busy),
                          runs=len(ok), note="; ".join(notes), cmd=ok[0].cmd))
    return out


LAG_NOTE = re.compile(r"own schedule lag p99 (\d+) µs")


def collapse_lag_notes(notes) -> list[str]:
    """The runs' distinct notes, their "own schedule lag p99 N µs" parts
    as one range over the runs rather than one note per run."""
    lags, rest = [], set()
    for note in notes:
        for part in note.split("; "):
            m = LAG_NOTE.fullmatch(part)
            if m:
                lags.append(int(m.group(1)))
            elif part:
                rest.add(part)
    out = sorted(rest)
    if lags:
        lo, hi = min(lags), max(lags)
        out.append(f"own schedule lag p99 {lo} µs" if lo == hi else f"own schedule lag p99 {lo}–{hi} µs ({len(lags)} runs)")
    return out


def pick(results, target, mode, tool, rate):
    for r in results:
        if (r.target, r.mode, r.tool, r.rate) == (target, mode, tool, rate) and r.ok:
            return r
    return None


def nearest_rate(rates: list[int], want: int) -> int | None:
    return min(rates, key=lambda r: abs(r - want)) if rates else None


def ratio_line(label, a, b, getter, limit, unit="", at_least=False, names=("meshbench", "peer")) -> str:
    """label: a / b = ratio, PASS when the ratio is at most limit (at least
    limit with at_least); no verdict without a limit."""
    va = getter(a) if a else None
    vb = getter(b) if b else None
    if va is None or vb is None or not vb:
        miss = [n for n, v in zip(names, (va, vb)) if v is None]
        return f"- {label}: n/a ({' and '.join(miss) or 'zero'} missing)"
    ratio = va / vb
    verdict = ""
    if limit is not None:
        met = ratio >= limit if at_least else ratio <= limit
        verdict = (" — PASS" if met else " — FAIL") + f" (target {'≥' if at_least else '≤'} {limit}×)"
    num = lambda v: f"{v:,.0f}" if abs(v) >= 1000 else f"{v:.4g}"  # noqa: E731
    return f"- {label}: {num(va)}{unit} / {num(vb)}{unit} = **{ratio:.3f}×**{verdict}"


# SATURATED is the server's CPU, in cores, above which a closed loop is
# the server's limit rather than the generator's (nginx runs one worker).
SATURATED = 0.95


def saturation_line(target, mb, wrk) -> str:
    """Closed loop: is meshbench the bottleneck? Not when the server it
    drives is saturated (nginx: one worker, one core), whatever the rate:
    the rate is then the server's."""
    label = f"- {target}: closed loop, meshbench not the bottleneck: the server's CPU while meshbench drives it"
    if target != "nginx":
        return f"{label}: n/a (judged on nginx, one worker: a server of one core)"
    if mb is None or mb.server_busy is None:
        return f"{label}: n/a (not measured)"
    peer = f" (wrk: {wrk.server_busy * 100:.0f}%)" if wrk is not None and wrk.server_busy is not None else ""
    met = mb.server_busy >= SATURATED
    return (f"{label}: **{mb.server_busy * 100:.0f}%** of a core{peer}"
            f" — {'PASS' if met else 'FAIL'} (target ≥ {SATURATED * 100:.0f}%: the server saturated)")


def best_peer(results, target, mode, rate, peers, getter):
    """The peer whose figure is lowest, among those measured."""
    rows = [r for r in (pick(results, target, mode, p, rate) for p in peers) if r and getter(r) is not None]
    return min(rows, key=getter) if rows else None


def ratios(results: list[Result], rates: list[int], targets: list[str]) -> str:
    """The engine's goals (issue 30: meshbench's engine is not the
    bottleneck when plans sweep 64 connections and 5000+ rps)."""
    out = ["## Goals", ""]
    cpu = lambda r: r.cpu_per_1k  # noqa: E731
    p50 = lambda r: None if r.p50_ns is None else r.p50_ns / 1000  # noqa: E731
    p99 = lambda r: None if r.p99_ns is None else r.p99_ns / 1000  # noqa: E731
    r5k = nearest_rate(rates, 5000)
    r1k = nearest_rate(rates, 1000)
    n5k = "" if r5k == 5000 else f" (5000 not measured; at {r5k} rps instead)"
    n1k = "" if r1k == 1000 else f" (1000 not measured; at {r1k} rps instead)"
    peers = ("oha", "vegeta")
    for t in targets:
        mb = lambda mode, rate: pick(results, t, mode, "meshbench", rate)  # noqa: E731
        # Goal 1 at equal send granularity: oha sends in bursts on tokio's
        # 1-ms timer (~5 requests per wake-up at 5000 rps), meshbench by
        # default one wake-up per request (exact spacing, its precision).
        out.append(ratio_line(f"{t}: CPU ms/1000 req at {r5k} rps, meshbench --send-tick 1ms / oha{n5k}",
                              pick(results, t, "open", "meshbench-tick1ms", r5k),
                              pick(results, t, "open", "oha", r5k), cpu, 1.0, " ms"))
        out.append(ratio_line(f"{t}: (information) CPU ms/1000 req at {r5k} rps, meshbench default / oha{n5k}; "
                              "exact spacing costs one wake-up per request, oha's 1-ms bursts ~0.56",
                              mb("open", r5k), pick(results, t, "open", "oha", r5k), cpu, None, " ms"))
        bp = best_peer(results, t, "open", r5k, peers, p99)
        out.append(ratio_line(f"{t}: p99 at {r5k} rps, meshbench / the best peer ({bp.tool if bp else 'none'}){n5k}",
                              mb("open", r5k), bp, p99, 1.0, " µs"))
        out.append(ratio_line(f"{t}: closed-loop rate, meshbench / wrk (issue 30's goal as written; "
                              "where the server is saturated, its rate, see README)",
                              mb("closed", None), pick(results, t, "closed", "wrk", None),
                              lambda r: r.achieved, 1.0, "/s", at_least=True))
        out.append(saturation_line(t, mb("closed", None), pick(results, t, "closed", "wrk", None)))
        out.append(ratio_line(f"{t}: closed-loop CPU ms/1000 req, meshbench / wrk",
                              mb("closed", None), pick(results, t, "closed", "wrk", None), cpu, 1.2, " ms"))
        bp = best_peer(results, t, "open", r1k, peers, cpu)
        out.append(ratio_line(f"{t}: CPU ms/1000 req at {r1k} rps, meshbench / the lightest peer ({bp.tool if bp else 'none'}){n1k}",
                              mb("open", r1k), bp, cpu, 1.0, " ms"))
        bp = best_peer(results, t, "open", r1k, peers, p50)
        out.append(ratio_line(f"{t}: p50 at {r1k} rps, meshbench / the best peer ({bp.tool if bp else 'none'}){n1k}",
                              mb("open", r1k), bp, p50, 1.0, " µs"))
        for rate in rates:
            parts = []
            for tool in ("meshbench", "meshbench-tick1ms", "oha", "vegeta"):
                r = pick(results, t, "open", tool, rate)
                if r is None or r.achieved is None:
                    parts.append(f"{tool} n/a")
                    continue
                dev = (r.achieved - rate) / rate * 100
                mark = (" PASS" if abs(dev) <= 0.2 else " FAIL") if tool.startswith("meshbench") else ""
                parts.append(f"{tool} {r.achieved:,.1f}/s ({dev:+.2f}%){mark}")
            out.append(f"- {t}: achieved vs target {rate} rps (meshbench target within ±0.2%): "
                       + "; ".join(parts))
    if any(r.tool == "meshbench-base" for r in results):
        out += ["", "## meshbench / --baseline (before → after: below 1 is lighter or faster)", ""]
        names = ("meshbench", "baseline")
        for t in targets:
            for rate in rates:
                a, b = pick(results, t, "open", "meshbench", rate), pick(results, t, "open", "meshbench-base", rate)
                out.append(ratio_line(f"{t}: CPU ms/1000 req at {rate} rps", a, b, cpu, None, " ms", names=names))
                out.append(ratio_line(f"{t}: p50 at {rate} rps", a, b, p50, None, " µs", names=names))
                out.append(ratio_line(f"{t}: p99 at {rate} rps", a, b, p99, None, " µs", names=names))
            a, b = pick(results, t, "closed", "meshbench", None), pick(results, t, "closed", "meshbench-base", None)
            out.append(ratio_line(f"{t}: closed-loop rate", a, b, lambda r: r.achieved, None, "/s", names=names))
            out.append(ratio_line(f"{t}: closed-loop CPU ms/1000 req", a, b, cpu, None, " ms", names=names))
    return "\n".join(out) + "\n"


def host_info(args, versions: dict[str, str], load_at_start: tuple[float, ...]) -> str:
    cpu_model = "?"
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu_model = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    mem = "?"
    try:
        kb = int(re.search(r"MemTotal:\s+(\d+)", Path("/proc/meminfo").read_text()).group(1))
        mem = f"{kb / 1048576:.1f} GiB"
    except (OSError, AttributeError):
        pass
    lines = [
        "# meshbench load-generator comparison", "",
        f"- date: {time.strftime('%Y-%m-%d %H:%M:%S %Z')}",
        f"- host: nproc {os.cpu_count()}, {cpu_model}, {mem}, kernel {platform.release()}",
        f"- load average at start: {' '.join(f'{x:.2f}' for x in load_at_start)}",
        f"- duration {args.duration}s per run, {args.connections} connections per tool, "
        f"rates {args.rates}, targets {args.target}, pinning {'server cpu0 / tools cpu1' if args.pin else 'off'}",
        "- CPU = user+sys of the load-generator process alone (wait4 rusage); "
        "latency in µs; requests = completed requests",
        "- versions: " + "; ".join(f"{k}: `{v}`" for k, v in versions.items()),
        "", "",
    ]
    return "\n".join(lines)


def commands_section(results: list[Result]) -> str:
    out = ["## Commands", "", "```"]
    seen = set()
    for r in results:
        if not r.cmd:
            continue
        key = (r.tool, r.mode)
        if key in seen:
            continue
        seen.add(key)
        out.append(" ".join(r.cmd))
    out += ["```", ""]
    return "\n".join(out)


# ---------------------------------------------------------------- main


def build_meshbench(work: Path) -> str | None:
    if not (REPO / "cmd" / "meshbench").is_dir() or not shutil.which("go"):
        return None
    out = work / "meshbench"
    log("building ./cmd/meshbench")
    try:
        r = subprocess.run(["go", "build", "-o", str(out), "./cmd/meshbench"], cwd=REPO,
                           capture_output=True, text=True, timeout=600)
    except subprocess.TimeoutExpired:
        log("go build timed out")
        return None
    if r.returncode != 0:
        log("go build ./cmd/meshbench failed: " + (r.stderr.strip().splitlines() or ["?"])[-1])
        return None
    return str(out)


def rotate(xs: list, k: int) -> list:
    """xs started at its k-th element: each repetition runs the tools in
    another order, so that drift over time is not read as a tool's."""
    if not xs:
        return xs
    k %= len(xs)
    return xs[k:] + xs[:k]


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--meshbench", help="meshbench binary (default: $MESHBENCH, else go build ./cmd/meshbench)")
    ap.add_argument("--baseline", help="a second meshbench binary (an older build, say) run beside it as "
                    "meshbench-base, for before/after figures from the same minutes")
    ap.add_argument("--duration", type=int, default=10, help="seconds per run (default 10)")
    ap.add_argument("--rates", default="1000,5000", help="open-loop rates, comma-separated (default 1000,5000)")
    ap.add_argument("--connections", type=int, default=16, help="connections per tool (default 16)")
    ap.add_argument("--target", choices=["nginx", "static", "both"], default="both")
    ap.add_argument("--tools", default="meshbench,meshbench-tick1ms,oha,vegeta,wrk", help="subset of tools to run")
    ap.add_argument("--repeat", type=int, default=1, help="runs of every tool, interleaved; the tables "
                    "show medians (default 1)")
    ap.add_argument("--no-closed", action="store_true", help="skip the closed-loop runs")
    ap.add_argument("--pin", action="store_true", help="pin the server to CPU 0 and the tools to CPU 1")
    ap.add_argument("--out", help="also write the Markdown report here")
    ap.add_argument("--json", help="write the raw results (every run) as JSON here")
    ap.add_argument("--keep", action="store_true", help="keep the work dir (raw tool outputs)")
    args = ap.parse_args()
    if args.duration <= 0 or args.duration > 600:
        ap.error("--duration must be in 1..600 seconds")
    if args.repeat < 1 or args.repeat > 50:
        ap.error("--repeat must be in 1..50")
    rates = [int(x) for x in args.rates.split(",") if x.strip()]
    if any(r <= 0 for r in rates):
        ap.error("--rates must be positive")
    tools = [t.strip() for t in args.tools.split(",") if t.strip()]
    if args.baseline:
        if not os.access(args.baseline, os.X_OK):
            ap.error(f"--baseline {args.baseline}: not an executable file")
        tools.append("meshbench-base")
    targets = ["nginx", "static"] if args.target == "both" else [args.target]
    server_cpus = {0} if args.pin else None
    load_at_start = os.getloadavg()

    work = Path(tempfile.mkdtemp(prefix="meshbench-loadgen-"))
    log(f"work dir {work}")
    mb = args.meshbench or os.environ.get("MESHBENCH") or build_meshbench(work)
    if mb:
        mb = str(Path(mb).resolve()) if os.sep in mb else (shutil.which(mb) or mb)
    base = str(Path(args.baseline).resolve()) if args.baseline else None
    runner = Runner(args, work, mb, base)

    versions = {"meshbench": "not available"}
    if mb:
        versions["meshbench"] = tool_version([mb, "version"], [mb, "--version"])
    if base:
        versions["meshbench-base"] = tool_version([base, "version"], [base, "--version"])
    versions["oha"] = tool_version([runner.oha, "--version"]) if runner.oha else "not installed"
    versions["vegeta"] = (tool_version([runner.vegeta, "-version"]) if runner.vegeta else "not installed")
    versions["wrk"] = tool_version([runner.wrk, "-v"]) if runner.wrk else "not installed"
    ngx = find_tool("nginx")
    versions["nginx"] = tool_version([ngx, "-v"]) if ngx else "not installed"

    open_tools = [t for t in ("meshbench", "meshbench-tick1ms", "meshbench-base", "oha", "vegeta") if t in tools]
    closed_tools = [t for t in ("meshbench", "meshbench-base", "oha", "wrk") if t in tools]
    skipped = []
    for tname in targets:
        try:
            target = (Nginx(work, server_cpus) if tname == "nginx" else
                      StaticServer(mb, work, server_cpus) if mb else None)
            if target is None:
                raise RuntimeError("no meshbench binary for `meshbench serve static`")
        except Exception as e:
            log(f"target {tname} skipped: {e}")
            skipped.append(f"{tname}: {e}")
            continue
        try:
            n = warm_up(target.port)
            log(f"{tname}: warm-up {n} requests in 1 s")
            time.sleep(PAUSE_S)
            for rep in range(1, args.repeat + 1):
                for rate in rates:
                    for tool in rotate(open_tools, rep - 1):
                        runner.run(target, "open", tool, rate, rep)
                if not args.no_closed:
                    for tool in rotate(closed_tools, rep - 1):
                        runner.run(target, "closed", tool, None, rep)
        except KeyboardInterrupt:
            log("interrupted")
            break
        finally:
            target.stop()

    measured_targets = list(dict.fromkeys(r.target for r in runner.results))
    rows = medians(runner.results)
    report = host_info(args, versions, load_at_start)
    if skipped:
        report += "\n".join(f"- target skipped: {s}" for s in skipped) + "\n\n"
    report += f"- load average at the end: {' '.join(f'{x:.2f}' for x in os.getloadavg())}\n\n"
    title = "## Results" + (f" (medians of {args.repeat} interleaved runs)" if args.repeat > 1 else "")
    report += title + "\n\n" + tables(rows) + "\n"
    report += ratios(rows, rates, measured_targets) + "\n"
    report += commands_section(runner.results)
    print(report)
    if args.out:
        Path(args.out).write_text(report)
        log(f"wrote {args.out}")
    if args.json:
        Path(args.json).write_text(json.dumps(
            {"versions": versions, "args": vars(args),
             "results": [asdict(r) | {"cpu_per_1k": r.cpu_per_1k} for r in runner.results]}, indent=2))
        log(f"wrote {args.json}")
    if args.keep:
        log(f"raw outputs kept in {work}")
    else:
        shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
