"""Load on the prediction server (components/serving/server.py), on 127.0.0.1 only: requests/s, p50/p99 latency,
answers by status, and the server's memory, for well-behaved clients alone and with abusive clients beside them.

    python benchmarks/serving_load.py [--clients 64] [--seconds 30] [--slow-clients 4] [--instances 8]
                                      [--model-dir DIR] [--max-connections 64] [--baseline COMMIT]

--baseline COMMIT also runs the server of that commit (its `components`, from `git archive`), before this tree's,
on the same model, requests and machine, and prints the two side by side with new/old ratios.

The server runs in its own process (its RSS is sampled every 0.2 s) on a SavedModel with adrank's
serving signature: the default is a small model that parses the raw features of configs/local.yaml's schema;
--model-dir serves a model that `adrank run` exported (runs/<id>/artifacts/.../saved_model). Requests are built from
the served model's own signature (every feature its parse op reads, with its type and value count:
`components.serving.signature.fitting_example`), and one is sent before the phases: a model that rejects it stops
the benchmark. The exit status is 1 when a well-behaved client got an error answer (4xx, or 5xx other than the
connection limit's 503), or none was answered 200, or the server died. Two phases of
--seconds each: (A) --clients clients posting --instances instances in a loop; (B) the same, plus
--slow-clients clients that announce 1 MB and send 2 bytes (answered 408 after the read timeout) and as many that
announce 100 MB (answered 413 unread); (C) overload: --overload-clients clients (default twice --max-connections)
and no abusive ones, where the connections over the limit are answered 503. Printed: the phases side by side and
B/A ratios.
"""

from __future__ import annotations

import argparse
import base64
import http.client
import json
import os
import socket
import subprocess
import sys
import tarfile
import tempfile
import threading
import time
from collections import Counter
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))  # components.serving: the signature the requests are built from

from foundation.process_table import resident_bytes  # noqa: E402

SERVER = """
import os, sys
sys.path.insert(0, {repo!r})
from components.serving.settings import ServingLimits
from components.serving.predictor import Predictor
from components.serving.server import make_server
limits = ServingLimits.from_environment()
server = make_server(Predictor({model!r}, limits.max_concurrent_predictions), 0, "/predict", "/health",
                     host="127.0.0.1", limits=limits)
print(server.server_address[1], flush=True)
server.serve_forever()
"""


def build_model(directory: Path) -> Path:
    """A SavedModel whose `serving_default` parses adrank-shaped raw examples and scores them with a small MLP."""
    import tensorflow as tf

    spec = {
        "user_id": tf.io.FixedLenFeature([], tf.string, default_value=""),
        "ad_id": tf.io.FixedLenFeature([], tf.string, default_value=""),
        "ad_category": tf.io.FixedLenFeature([], tf.string, default_value=""),
        "user_interests": tf.io.VarLenFeature(tf.string),
        "ad_bid": tf.io.FixedLenFeature([], tf.float32, default_value=0.0),
        "user_age": tf.io.FixedLenFeature([], tf.float32, default_value=0.0),
    }

    class Ranker(tf.Module):
        def __init__(self):
            super().__init__()
            self.table = tf.Variable(tf.random.normal([4096, 16], seed=1))
            self.dense = tf.Variable(tf.random.normal([16 * 4 + 2, 64], seed=2))
            self.out = tf.Variable(tf.random.normal([64, 1], seed=3))

        @tf.function(input_signature=[tf.TensorSpec([None], tf.string, name="examples")])
        def serve(self, examples):
            raw = tf.io.parse_example(examples, spec)
            ids = [tf.strings.to_hash_bucket_fast(raw[name], 4096) for name in ("user_id", "ad_id", "ad_category")]
            interests = tf.sparse.to_dense(raw["user_interests"], default_value="")
            pooled = tf.reduce_mean(tf.gather(self.table, tf.strings.to_hash_bucket_fast(interests, 4096)), axis=1)
            x = tf.concat([tf.gather(self.table, i) for i in ids] + [pooled, tf.stack([raw["ad_bid"],
                                                                                       raw["user_age"]], 1)], 1)
            logit = tf.matmul(tf.nn.relu(tf.matmul(x, self.dense)), self.out)
            return {"engagement": tf.reshape(tf.sigmoid(logit), [-1])}

    model_dir = directory / "model"
    ranker = Ranker()
    tf.saved_model.save(ranker, str(model_dir), signatures={"serving_default": ranker.serve})
    return model_dir


def request_body(model_dir: str, instances: int) -> bytes:
    """`instances` examples that fit the model's serving signature, as the server's JSON request."""
    import tensorflow as tf

    from components.serving.request import SIGNATURE
    from components.serving.signature import fitting_example, signature_expectations

    expectations = signature_expectations(tf.saved_model.load(model_dir).signatures[SIGNATURE])
    rows = [{"b64": base64.b64encode(fitting_example(expectations, i)).decode()} for i in range(instances)]
    return json.dumps({"instances": rows}).encode()


def first_answer(port: int, body: bytes) -> tuple[int, str]:
    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
    connection.request("POST", "/predict", body, {"Content-Type": "application/json"})
    response = connection.getresponse()
    text = response.read().decode(errors="replace")
    connection.close()
    return response.status, text


def error_answers(statuses: dict[str, int]) -> dict[str, int]:
    """The well-behaved clients' answers that are errors: 4xx, and 5xx other than the connection limit's 503."""
    return {status: count for status, count in statuses.items()
            if status.isdigit() and int(status) >= 400 and status != "503"}


class Tally:
    def __init__(self):
        self.lock = threading.Lock()
        self.latencies: list[float] = []
        self.statuses: Counter = Counter()

    def add(self, status: str, seconds: float | None = None) -> None:
        with self.lock:
            self.statuses[status] += 1
            if seconds is not None:
                self.latencies.append(seconds)


def well_behaved(port: int, body: bytes, stop: float, tally: Tally) -> None:
    while time.monotonic() < stop:
        started = time.perf_counter()
        try:
            connection = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
            connection.request("POST", "/predict", body, {"Content-Type": "application/json"})
            response = connection.getresponse()
            response.read()
            connection.close()
        except OSError as error:
            tally.add(f"connection error ({type(error).__name__})")
            continue
        elapsed = time.perf_counter() - started
        tally.add(str(response.status), elapsed if response.status == 200 else None)
        if response.status == 503:
            time.sleep(0.01)


def abusive(port: int, announced: int, stop: float, tally: Tally) -> None:
    """Announce `announced` bytes, send 2, and wait for the server's answer."""
    while time.monotonic() < stop:
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=60) as connection:
                connection.sendall(f"POST /predict HTTP/1.1\r\nHost: x\r\nContent-Length: {announced}\r\n\r\n{{}}"
                                   .encode())
                answer = connection.recv(64)
            tally.add(f"abusive {answer.split()[1].decode() if answer else 'closed'}")
        except OSError as error:
            tally.add(f"abusive connection error ({type(error).__name__})")


def rss_sampler(pid: int, stop: threading.Event, samples: list[int]) -> None:
    while not stop.is_set():
        rss, found = resident_bytes(pid)
        if not found:
            return
        samples.append(rss)
        stop.wait(0.2)


def phase(port: int, pid: int, args, body: bytes, abuse: bool, clients: int) -> dict:
    tally, samples, stop_sampling = Tally(), [], threading.Event()
    sampler = threading.Thread(target=rss_sampler, args=(pid, stop_sampling, samples), daemon=True)
    sampler.start()
    stop = time.monotonic() + args.seconds
    threads = [threading.Thread(target=well_behaved, args=(port, body, stop, tally)) for _ in range(clients)]
    if abuse:
        threads += [threading.Thread(target=abusive, args=(port, 1_000_000, stop, tally))
                    for _ in range(args.slow_clients)]
        threads += [threading.Thread(target=abusive, args=(port, 100_000_000, stop, tally))
                    for _ in range(args.slow_clients)]
    started = time.monotonic()
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    elapsed = time.monotonic() - started
    stop_sampling.set()
    sampler.join()
    latencies = sorted(tally.latencies)

    def percentile(q: float) -> float:
        return latencies[min(len(latencies) - 1, int(q * len(latencies)))] * 1000 if latencies else float("nan")

    return {"ok_per_second": len(latencies) / elapsed, "busy_per_second": tally.statuses["503"] / elapsed, "p50_ms": percentile(0.50), "p99_ms": percentile(0.99),
            "statuses": dict(tally.statuses), "rss_peak_mib": max(samples, default=0) / 2**20,
            "rss_end_mib": (samples[-1] if samples else 0) / 2**20}


def source_tree(commit: str, directory: Path) -> Path:
    """The `components` of `commit` (git archive) under `directory`: the server that commit shipped."""
    archive = directory / "baseline.tar"
    with archive.open("wb") as out:
        subprocess.run(["git", "-C", str(REPO), "archive", commit, "components"], stdout=out, check=True)
    tree = directory / "baseline"
    with tarfile.open(archive) as tar:
        tar.extractall(tree, filter="data")
    return tree


def measure(source: Path, model: str, args) -> dict:
    """The three phases against the server of `source` (a tree holding `components`), in its own process."""
    environment = os.environ | {"ADRANK_MAX_CONNECTIONS": str(args.max_connections),
                                "ADRANK_READ_TIMEOUT_SECONDS": str(args.read_timeout),
                                "TF_CPP_MIN_LOG_LEVEL": "2"}
    server = subprocess.Popen([sys.executable, "-c", SERVER.format(repo=str(source), model=model)],
                              stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True, env=environment)
    try:
        port = int(server.stdout.readline())
        # the server logs a line per request: drain it, or a full pipe blocks every handler thread
        threading.Thread(target=lambda: [None for _ in server.stdout], daemon=True).start()
        body = request_body(model, args.instances)
        status, text = first_answer(port, body)
        if status != 200:
            raise SystemExit(f"the model at {model} rejects the benchmark's request ({status}): {text[:300]}")
        idle = resident_bytes(server.pid)[0]
        print(f"{source}: server pid {server.pid} on 127.0.0.1:{port}, idle RSS {idle / 2**20:.0f} MiB; "
              f"{args.clients} clients × {args.instances} instances ({len(body):,} B a request), "
              f"{args.seconds:g} s a phase, max connections {args.max_connections}, "
              f"read timeout {args.read_timeout:g} s, {os.cpu_count()} CPUs", flush=True)
        phases = {"A": phase(port, server.pid, args, body, abuse=False, clients=args.clients),
                  "B": phase(port, server.pid, args, body, abuse=True, clients=args.clients),
                  "C": phase(port, server.pid, args, body, abuse=False, clients=args.overload_clients)}
        phases["alive"] = server.poll() is None
    finally:
        server.terminate()
        server.wait(timeout=30)
    return phases


def print_server(name: str, result: dict, args) -> None:
    plain, abused, overload = result["A"], result["B"], result["C"]
    rows = [(name, "A: clients only", f"B: + {args.slow_clients} slow + {args.slow_clients} 100 MB", "B/A",
             f"C: {args.overload_clients} clients")]
    for key, label, unit in (("ok_per_second", "answered 200 / s", "{:,.1f}"), ("p50_ms", "p50 latency ms", "{:,.1f}"),
                             ("p99_ms", "p99 latency ms", "{:,.1f}"), ("busy_per_second", "answered 503 / s", "{:,.1f}"),
                             ("rss_peak_mib", "server peak RSS MiB", "{:,.0f}"),
                             ("rss_end_mib", "server RSS at end MiB", "{:,.0f}")):
        ratio = abused[key] / plain[key] if plain[key] else float("nan")
        rows.append((label, unit.format(plain[key]), unit.format(abused[key]), f"{ratio:.2f}", unit.format(overload[key])))
    widths = [max(len(row[i]) for row in rows) for i in range(5)]
    for row in rows:
        print("  ".join(cell.ljust(width) for cell, width in zip(row, widths)))
    for key in "ABC":
        print(f"{key} answers: {result[key]['statuses']}")
    print(f"server alive after the phases: {result['alive']}")


def print_side_by_side(old: dict, new: dict) -> None:
    rows = [("", "old", "new", "new/old")]
    for key in "ABC":
        for figure, label in (("ok_per_second", "answered 200 / s"), ("p50_ms", "p50 latency ms"),
                              ("p99_ms", "p99 latency ms"), ("busy_per_second", "answered 503 / s"),
                              ("rss_peak_mib", "peak RSS MiB")):
            a, b = old[key][figure], new[key][figure]
            rows.append((f"{key}: {label}", f"{a:,.1f}", f"{b:,.1f}", f"{b / a:.2f}" if a else "-"))
    widths = [max(len(row[i]) for row in rows) for i in range(4)]
    for row in rows:
        print("  ".join(cell.ljust(width) for cell, width in zip(row, widths)))


def failures(name: str, result: dict) -> list[str]:
    found = []
    for key in "ABC":
        errors = error_answers(result[key]["statuses"])
        if errors:
            found.append(f"{name} {key}: error answers to well-behaved clients {errors}")
        if result[key]["ok_per_second"] == 0:
            found.append(f"{name} {key}: no request answered 200")
    if not result["alive"]:
        found.append(f"{name}: the server died")
    return found


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--clients", type=int, default=64)
    parser.add_argument("--overload-clients", type=int, default=None)
    parser.add_argument("--seconds", type=float, default=30.0)
    parser.add_argument("--slow-clients", type=int, default=4)
    parser.add_argument("--instances", type=int, default=8)
    parser.add_argument("--model-dir", default=None)
    parser.add_argument("--max-connections", type=int, default=64)
    parser.add_argument("--read-timeout", type=float, default=5.0)
    parser.add_argument("--baseline", default=None, help="a commit whose server is measured too, first")
    args = parser.parse_args()
    args.overload_clients = args.overload_clients or 2 * args.max_connections

    with tempfile.TemporaryDirectory(prefix="serving-load-") as temp:
        model = args.model_dir or str(build_model(Path(temp)))
        results = {}
        if args.baseline:
            results[f"old ({args.baseline})"] = measure(source_tree(args.baseline, Path(temp)), model, args)
        results["new (this tree)"] = measure(REPO, model, args)
    for name, result in results.items():
        print_server(name, result, args)
    if len(results) == 2:
        print_side_by_side(*results.values())
    failed = [line for name, result in results.items() for line in failures(name, result)]
    for line in failed:
        print(line)
    return 0 if not failed else 1


if __name__ == "__main__":
    raise SystemExit(main())
