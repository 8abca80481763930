"""A bounded load run on loopback: many clients signing in and writing decks and CMS entries.

    .venv/bin/python -m bench.load [--seconds 30] [--clients 50]

Two runs, one after the other: two `reactor serve` processes on one throwaway PostgreSQL (every
client alternates between them, request by request), and one process on the SQLite file, the
baseline. Each client signs in (as its own user, made for the run), then, until the time is up,
creates a deck, reads it back through the other process, changes its own CMS entry naming the
version it saw, and checks its session on the other process. Afterwards every acknowledged
write is read back: a missing deck or an entry without its last acknowledged body is a lost
write. Printed: requests, requests per second, p50/p95 latency, 5xx and lost writes per run.
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections import Counter
from pathlib import Path
from typing import Any

import httpx

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))
from postgres import SKIP_REASON, Cluster, postgres_bin  # noqa: E402
from reactor.server.auth.sessions import Auth  # noqa: E402
from reactor.server.database import Database  # noqa: E402
from reactor_plugins.cms.backend.store import SiteStore  # noqa: E402

PASSWORD = "load-run-password"


def serve(data: Path, database: str) -> tuple[subprocess.Popen[str], str]:
    command = [sys.executable, "-m", "reactor", "serve", "--port", "0", "--data", str(data)]
    if database:
        command += ["--database", database]
    process = subprocess.Popen(
        command, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True
    )
    assert process.stdout is not None
    line = process.stdout.readline()
    if not line.startswith("reactor is serving"):
        process.kill()
        raise SystemExit(f"bench.load: the server did not start: {line!r}")
    return process, line.split()[3].rstrip("/")


def make_users(target: str, count: int) -> list[str]:
    """One user per client (the demo's sign-in limits are per user), each an editor of acme."""
    database = Database(target)
    auth, sites = Auth(database, seed=False), SiteStore(database)
    names = [f"load{number}" for number in range(count)]
    for name in names:
        auth.create_user(name, PASSWORD, ["staff"])
        sites.set_role("acme", name, "editor")
    database.close()
    return names


class Client(threading.Thread):
    def __init__(
        self, number: int, username: str, urls: list[str], until: float, start_at: float
    ) -> None:
        super().__init__(daemon=True)
        self.number, self.username, self.urls, self.until, self.start_at = (
            number,
            username,
            urls,
            until,
            start_at,
        )
        self.latencies: list[float] = []
        self.statuses: Counter[int] = Counter()
        self.decks: dict[str, str] = {}  # acknowledged: id -> title
        self.entry: tuple[str, str] | None = None  # acknowledged: (slug, body)
        self.failures: list[str] = []
        self.turn = 0

    def call(self, method: str, path: str, **options: Any) -> httpx.Response:
        url = self.urls[self.turn % len(self.urls)]
        self.turn += 1
        started = time.perf_counter()
        answer = self.http.request(method, url + path, **options)
        self.latencies.append(time.perf_counter() - started)
        self.statuses[answer.status_code] += 1
        return answer

    def run(self) -> None:
        time.sleep(max(0.0, self.start_at - time.time()))
        with httpx.Client(timeout=60) as self.http:
            signed = self.call(
                "POST", "/auth/sign-in", json={"username": self.username, "password": PASSWORD}
            )
            if signed.status_code != 200:
                self.failures.append(f"sign-in answered {signed.status_code}")
                return
            auth = {"authorization": f"Bearer {signed.json()['token']}"}
            slug = f"load-{self.number}"
            made = self.call(
                "POST",
                "/api/cms/sites/acme/entries",
                json={"title": slug, "slug": slug},
                headers=auth,
            )
            if made.status_code != 201:
                self.failures.append(f"creating the entry answered {made.status_code}")
                return
            version, n = made.json()["version"], 0
            while time.time() < self.until:
                n += 1
                id, title = f"load-{self.number}-{n}", f"Deck {n} of client {self.number}"
                deck = {
                    "id": id,
                    "title": title,
                    "slides": [{"title": "One", "body": f"Written at {time.time()}"}],
                }
                put = self.call(
                    "PUT", f"/api/decks/{id}", json=deck, headers={**auth, "if-match": '"0"'}
                )
                if put.status_code == 201:
                    self.decks[id] = title
                read = self.call("GET", f"/api/decks/{id}")
                if put.status_code == 201 and (
                    read.status_code != 200 or read.json()["title"] != title
                ):
                    self.failures.append(
                        f"deck {id} acknowledged but read back as {read.status_code}"
                    )
                body = f"Change {n}"
                changed = self.call(
                    "PATCH",
                    f"/api/cms/sites/acme/entries/{slug}",
                    json={"body": body, "version": version},
                    headers=auth,
                )
                if changed.status_code == 200:
                    version, self.entry = changed.json()["version"], (slug, body)
                me = self.call("GET", "/auth/me", headers=auth)
                if me.status_code != 200:
                    self.failures.append(f"the session was refused ({me.status_code})")


def run(urls: list[str], users: list[str], seconds: float) -> dict[str, Any]:
    start_at = time.time() + 0.5
    until = start_at + seconds
    # Sign-ins are spread over the first seconds (8 a second): every client signs in from one
    # loopback address, and 30 attempts at once from one address are refused by design (429).
    clients = [Client(i, name, urls, until, start_at + i / 8) for i, name in enumerate(users)]
    for client in clients:
        client.start()
    for client in clients:
        client.join()
    elapsed = time.time() - start_at
    latencies = sorted(value for client in clients for value in client.latencies)
    statuses = sum((client.statuses for client in clients), Counter())
    lost = 0
    with httpx.Client(timeout=60) as http:
        for client in clients:
            for id, title in client.decks.items():
                answer = http.get(f"{urls[-1]}/api/decks/{id}")
                lost += answer.status_code != 200 or answer.json()["title"] != title
            if client.entry:
                signed = http.post(
                    f"{urls[0]}/auth/sign-in",
                    json={"username": client.username, "password": PASSWORD},
                )
                entry = http.get(
                    f"{urls[0]}/api/cms/sites/acme/entries/{client.entry[0]}",
                    headers={"authorization": f"Bearer {signed.json()['token']}"},
                )
                lost += entry.json().get("body") != client.entry[1]
    return {
        "requests": len(latencies),
        "per_second": len(latencies) / elapsed,
        "p50_ms": statistics.median(latencies) * 1000,
        "p95_ms": latencies[int(len(latencies) * 0.95)] * 1000,
        "server_errors": sum(count for status, count in statuses.items() if status >= 500),
        "statuses": dict(sorted(statuses.items())),
        "acknowledged": sum(len(c.decks) + (c.entry is not None) for c in clients),
        "lost": lost,
        "failures": [f for c in clients for f in c.failures][:5],
    }


def scenario(
    name: str, database: str, processes: int, folder: Path, clients: int, seconds: float
) -> dict[str, Any]:
    started = [serve(folder / f"{name}-{i}", database or "") for i in range(processes)]
    if not database:  # SQLite: the one process's file
        database = str(folder / f"{name}-0" / "reactor.sqlite3")
    try:
        users = make_users(database, clients)
        return {"name": name, **run([url for _, url in started], users, seconds)}
    finally:
        for process, _ in started:
            process.terminate()
            process.wait(timeout=30)
            if process.stdout:
                process.stdout.close()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m bench.load", description=__doc__.split("\n\n")[0]
    )
    parser.add_argument("--seconds", type=float, default=30)
    parser.add_argument("--clients", type=int, default=50)
    args = parser.parse_args(argv)
    bin_dir = postgres_bin()
    if bin_dir is None:
        print(f"bench.load: {SKIP_REASON}", file=sys.stderr)
        return 2
    folder = Path(tempfile.mkdtemp(prefix="reactor-load-"))
    cluster = Cluster(bin_dir)
    cluster.start()
    try:
        results = [
            scenario(
                "PostgreSQL, 2 processes", cluster.database(), 2, folder, args.clients, args.seconds
            ),
            scenario("SQLite, 1 process", "", 1, folder, args.clients, args.seconds),
        ]
    finally:
        cluster.stop()
    print(f"{args.clients} clients for {args.seconds:g} s each\n")
    print("| run | requests | requests/s | p50 ms | p95 ms | 5xx | acknowledged writes | lost |")
    print("| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: |")
    for r in results:
        print(
            f"| {r['name']} | {r['requests']} | {r['per_second']:.0f} | {r['p50_ms']:.1f} | "
            f"{r['p95_ms']:.1f} | {r['server_errors']} | {r['acknowledged']} | {r['lost']} |"
        )
    for r in results:
        print(
            f"\n{r['name']}: statuses {r['statuses']}"
            + (f"; failures {r['failures']}" if r["failures"] else "")
        )
    return (
        0
        if all(r["server_errors"] == 0 and r["lost"] == 0 and not r["failures"] for r in results)
        else 1
    )


if __name__ == "__main__":
    raise SystemExit(main())
