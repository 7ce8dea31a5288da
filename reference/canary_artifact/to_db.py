"""pktsim flow list -> the workload .db files of Canary's artifact (issue 50).

The artifact (hopnets/practical_deflection @ 137c952, `Omnet_Sims/dc_simulations`)
draws no traffic itself: each client application reads pre-sampled SQLite
files (`MultiSocketBasicClient::handleStartOperation`, `read_value_from_db`).
Written from pktsim's own flow list (a run's `flows.parquet`), they make both
simulators start the same flows at the same times between the same hosts.

What the application code does with them (`MultiSocketBasicClient.cc`, the
`omnetpp_1G.ini` layout: per server `app[0]` = `DCTcpGenericServerApp`,
`app[1]` = background client, category "cache", `app[2]` = query client,
category "web"):

* File `<root>distributions/<category>_background_<kind>_db_<flowmult>_flowmult_
  <intermult>_intermult_<rep>.db`, or for query apps `<category>_bursty_<kind>_db_
  <flowmult>_flowmult_<intermult>_intermult_<reqPerBurst>_flows_per_incast_
  <replyLength>_incast_flow_size_<rep>.db`; multipliers as C++
  `std::to_string(double)` ("11.850000"), `<rep>` is always 0 (hard-coded
  `repetition_num = 0`). `<kind>` / table: `inter_arrival_time` / `inter_arrival`,
  `flow_size` / `flow_size`, `server_idx` / `server_idx`, `flow_ids` /
  `flow_ids`, and for query apps also `query_ids` / `query_ids`.
* One column `server<i>app<j>` per application, read by
  `SELECT server<i>app<j> FROM <table>`; empty strings are skipped (so shorter
  columns are padded with ""), NULL would crash it (`strcmp(NULL, "")`).
  Every application's column must exist, even when it has nothing to send.
* Background client on host i (the flow's *receiver*: it connects to
  `server[server_idx]`, sends a 250 B request and the server replies
  `flow_size` bytes): `inter_arrival` holds *gaps* — the first connect is at
  0 + v[0], each later one at the previous connect time + v[k]. After the
  last flow the code pops one more value (`rescheduleOrDeleteTimer(
  get_inter_arrival_time())` throws if empty), so a sentinel gap far past
  `stopTime` (100,000 s) ends the list. `flow_size`, `server_idx` (= the
  flow's sender) and `flow_ids` (the requester id it reports) one per flow.
* Query client on host i (the query's client): `inter_arrival` holds the
  query's *absolute* start time, written once per request
  (`num_requests_per_burst` copies per query); `server_idx` the servers, in
  request order; `flow_ids` one requester id per request; `query_ids` one per
  query. Reply sizes come from the ini's `replyLength`, not from `flow_size`
  (written anyway, one value per request). An empty column is allowed.

We use pktsim's flow ids as requester ids (the *reply* flow's id for
queries), so the artifact's `flowEndedRequesterID` vector maps back to
pktsim's flows one to one.
"""

from __future__ import annotations

import argparse
import sqlite3
import tomllib
from collections import defaultdict
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path

PS_PER_S = 10**12
# Past the client's default stopTime (100,000 s): popped, never scheduled.
SENTINEL_GAP_S = 1.0e6

KINDS = {
    "inter_arrival_time": "inter_arrival",
    "flow_size": "flow_size",
    "server_idx": "server_idx",
    "flow_ids": "flow_ids",
}
QUERY_KINDS = {**KINDS, "query_ids": "query_ids"}


class ConvertError(ValueError):
    """The flow list cannot be expressed as the artifact's workload files."""


@dataclass(frozen=True)
class Flow:
    flow_id: int
    src: int
    dst: int
    size_bytes: int
    start_ps: int
    tag: str
    query: int | None = None


@dataclass(frozen=True)
class Setup:
    """The artifact-side parameters that name and shape the files."""

    hosts: int
    requests_per_query: int = 40
    reply_bytes: int = 20_000
    request_bytes: int = 250
    background_app: int = 1
    query_app: int = 2
    background_category: str = "cache"
    query_category: str = "web"
    background_flow_mult: float = 1.0
    background_inter_mult: float = 11.85
    query_flow_mult: float = 1.0
    query_inter_mult: float = 1.0
    repetition: int = 0


@dataclass
class Tables:
    """file name -> (table name, {column: values as text})."""

    files: dict[str, tuple[str, dict[str, list[str]]]] = field(default_factory=dict)


def cpp_to_string(x: float) -> str:
    """C++ `std::to_string(double)`: fixed, 6 decimals."""
    return f"{x:.6f}"


def _num(x: float) -> str:
    # Shortest text that reads back (std::stod) as the same double.
    return repr(float(x))


def file_names(setup: Setup) -> dict[tuple[str, str], str]:
    """(role, kind) -> file name under distributions/, role "background" or "bursty"."""
    out = {}
    rep = str(setup.repetition)
    fm = cpp_to_string(setup.background_flow_mult)
    im = cpp_to_string(setup.background_inter_mult)
    for kind in KINDS:
        out[("background", kind)] = (
            f"{setup.background_category}_background_{kind}_db_{fm}_flowmult_{im}_intermult_{rep}.db"
        )
    fm = cpp_to_string(setup.query_flow_mult)
    im = cpp_to_string(setup.query_inter_mult)
    for kind in QUERY_KINDS:
        out[("bursty", kind)] = (
            f"{setup.query_category}_bursty_{kind}_db_{fm}_flowmult_{im}_intermult_"
            f"{setup.requests_per_query}_flows_per_incast_{setup.reply_bytes}_incast_flow_size_{rep}.db"
        )
    return out


def column(host: int, app: int) -> str:
    return f"server{host}app{app}"


def _check_host(h: int, setup: Setup, what: str) -> None:
    if not 0 <= h < setup.hosts:
        raise ConvertError(f"{what}: host {h} outside 0..{setup.hosts - 1}")


def split_queries(flows: Iterable[Flow], setup: Setup) -> list[dict]:
    """Group query flows into queries: client, start, servers and reply ids in request order."""
    by_q: dict[int, list[Flow]] = defaultdict(list)
    for f in flows:
        if f.query is None:
            raise ConvertError(f"flow {f.flow_id}: tag 'query' without a query id")
        by_q[f.query].append(f)
    queries = []
    n = setup.requests_per_query
    for qid, fl in sorted(by_q.items()):
        srcs = defaultdict(int)
        dsts = defaultdict(int)
        for f in fl:
            srcs[f.src] += 1
            dsts[f.dst] += 1
        clients = [h for h in srcs if srcs[h] == n and dsts.get(h, 0) == n]
        if len(fl) != 2 * n or len(clients) != 1:
            raise ConvertError(
                f"query {qid}: expected {n} requests from one client and {n} replies to it "
                f"({2 * n} flows), got {len(fl)} flows"
            )
        client = clients[0]
        _check_host(client, setup, f"query {qid}")
        reqs = sorted((f for f in fl if f.src == client), key=lambda f: f.flow_id)
        reps = {f.src: f for f in fl if f.dst == client}
        start = min(f.start_ps for f in reqs)
        servers, reply_ids = [], []
        for r in reqs:
            if r.size_bytes != setup.request_bytes:
                raise ConvertError(
                    f"query {qid}: request flow {r.flow_id} has {r.size_bytes} B, "
                    f"the artifact sends {setup.request_bytes} B"
                )
            rep = reps.get(r.dst)
            if rep is None:
                raise ConvertError(f"query {qid}: no reply from server {r.dst}")
            if rep.size_bytes != setup.reply_bytes:
                raise ConvertError(
                    f"query {qid}: reply flow {rep.flow_id} has {rep.size_bytes} B, "
                    f"the artifact's replyLength is {setup.reply_bytes} B"
                )
            _check_host(r.dst, setup, f"query {qid}")
            servers.append(r.dst)
            reply_ids.append(rep.flow_id)
        if len(set(servers)) != n:
            raise ConvertError(f"query {qid}: a server appears twice")
        queries.append(
            dict(query=qid, client=client, start_ps=start, servers=servers, reply_ids=reply_ids)
        )
    return queries


def build_tables(flows: Iterable[Flow], setup: Setup) -> Tables:
    """The .db contents for a flow list (pure: no files touched)."""
    flows = list(flows)
    seen = set()
    bg: dict[int, list[Flow]] = defaultdict(list)
    qflows = []
    for f in flows:
        if f.flow_id in seen:
            raise ConvertError(f"flow id {f.flow_id} appears twice")
        seen.add(f.flow_id)
        if f.start_ps < 0 or f.size_bytes <= 0:
            raise ConvertError(f"flow {f.flow_id}: bad start {f.start_ps} or size {f.size_bytes}")
        if f.tag == "query":
            qflows.append(f)
        elif f.tag == "background":
            _check_host(f.src, setup, f"flow {f.flow_id}")
            _check_host(f.dst, setup, f"flow {f.flow_id}")
            if f.src == f.dst:
                raise ConvertError(f"flow {f.flow_id}: src == dst == {f.src}")
            if f.size_bytes >= 2**31:
                raise ConvertError(
                    f"flow {f.flow_id}: {f.size_bytes} B does not fit the artifact's int"
                )
            bg[f.dst].append(f)
        else:
            raise ConvertError(
                f"flow {f.flow_id}: tag {f.tag!r} is neither 'background' nor 'query'"
            )

    names = file_names(setup)
    cols: dict[tuple[str, str], dict[str, list[str]]] = {k: {} for k in names}
    for h in range(setup.hosts):
        c = column(h, setup.background_app)
        fl = sorted(bg.get(h, []), key=lambda f: (f.start_ps, f.flow_id))
        gaps, prev = [], 0
        for f in fl:
            gaps.append(_num((f.start_ps - prev) / PS_PER_S))
            prev = f.start_ps
        gaps.append(_num(SENTINEL_GAP_S))
        cols[("background", "inter_arrival_time")][c] = gaps
        cols[("background", "flow_size")][c] = [str(f.size_bytes) for f in fl]
        cols[("background", "server_idx")][c] = [str(f.src) for f in fl]
        cols[("background", "flow_ids")][c] = [str(f.flow_id) for f in fl]

    per_client: dict[int, list[dict]] = defaultdict(list)
    for q in split_queries(qflows, setup):
        per_client[q["client"]].append(q)
    for h in range(setup.hosts):
        c = column(h, setup.query_app)
        qs = sorted(per_client.get(h, []), key=lambda q: (q["start_ps"], q["query"]))
        ia, fs, sv, ids, qids = [], [], [], [], []
        for q in qs:
            t = _num(q["start_ps"] / PS_PER_S)
            ia += [t] * setup.requests_per_query
            fs += [str(setup.reply_bytes)] * setup.requests_per_query
            sv += [str(s) for s in q["servers"]]
            ids += [str(i) for i in q["reply_ids"]]
            qids.append(str(q["query"]))
        cols[("bursty", "inter_arrival_time")][c] = ia
        cols[("bursty", "flow_size")][c] = fs
        cols[("bursty", "server_idx")][c] = sv
        cols[("bursty", "flow_ids")][c] = ids
        cols[("bursty", "query_ids")][c] = qids

    out = Tables()
    for key, name in names.items():
        table = QUERY_KINDS[key[1]]
        out.files[name] = (table, cols[key])
    return out


def write_dbs(tables: Tables, dist_dir: Path) -> list[Path]:
    """Write every file (replacing old ones); return their paths."""
    dist_dir.mkdir(parents=True, exist_ok=True)
    paths = []
    for name, (table, cols) in sorted(tables.files.items()):
        p = dist_dir / name
        if p.exists():
            p.unlink()
        names = list(cols)
        rows = max((len(v) for v in cols.values()), default=0)
        con = sqlite3.connect(p)
        try:
            # Untyped columns keep the text exactly as written.
            con.execute(f"CREATE TABLE {table} ({', '.join(names)})")
            data = [
                tuple(cols[c][i] if i < len(cols[c]) else "" for c in names) for i in range(rows)
            ]
            if names and data:
                con.executemany(f"INSERT INTO {table} VALUES ({', '.join('?' * len(names))})", data)
            con.commit()
        finally:
            con.close()
        paths.append(p)
    return paths


def read_column(path: Path, table: str, col: str) -> list[str]:
    """Read one column back as the artifact does (rows in order, "" skipped)."""
    con = sqlite3.connect(path)
    try:
        rows = con.execute(f"SELECT {col} FROM {table}").fetchall()
    finally:
        con.close()
    return [str(r[0]) for r in rows if r[0] != ""]


# ---------------------------------------------------------------- config side


def setup_from_config(cfg: Mapping) -> Setup:
    """Setup from a parsed pktsim config (dict from tomllib)."""
    topo = cfg.get("topology", {})
    if topo.get("kind") != "leaf_spine":
        raise ConvertError(
            "the artifact's network is a leaf-spine: topology.kind must be 'leaf_spine'"
        )
    hosts = int(topo["leaves"]) * int(topo["hosts_per_leaf"])
    q = [w for w in cfg.get("workload", []) if w.get("kind") == "queries"]
    kw = {}
    if q:
        if len(q) > 1:
            raise ConvertError(
                "the artifact has one query app per server: one queries workload at most"
            )
        w = q[0]
        kw = dict(
            requests_per_query=int(w["servers"]),
            reply_bytes=int(w["reply_bytes"]),
            request_bytes=int(w.get("request_bytes", 250)),
        )
    return Setup(hosts=hosts, **kw)


# INET/OMNeT statistics the comparison reads (all others stay off, as in the artifact):
# each reply's first byte and end at its client (vectors, keyed by requester id = pktsim
# flow id), frames sent and received OK per MAC (drops = what went in and did not come
# out), deflections (the relay's FBPacketGenerated), SYNs sent (SYN timeouts = SYNs -
# active opens).
STATISTICS = [
    "**.server[*].app[*].flowEndedRequesterID.statistic-recording = true",
    "**.eth[*].mac.txPk.statistic-recording = true",
    "**.eth[*].mac.rxPkOk.statistic-recording = true",
    "**.eth[*].mac.txPk.result-recording-modes = count",
    "**.eth[*].mac.rxPkOk.result-recording-modes = count",
    "**.relayUnit.FBPacketGenerated.statistic-recording = true",
    "**.tcp.tcpConnectionSYNSent.statistic-recording = true",
    "**.tcp.tcpConnectionSYNSent.result-recording-modes = count",
    "**.server[*].app[*].flowStartedRequesterID.statistic-recording = true",
    "**.flowEndedRequesterID:vector.vector-recording = true",
    "**.flowStartedRequesterID:vector.vector-recording = true",
    "**.vector-recording = false",
]


def ini_overrides(
    *,
    base_ini: Path,
    base_config: str,
    dist_root: Path,
    sim_time_s: float,
    out_prefix: Path,
    setup: Setup,
    name: str = "PKTSIM",
    extra: Iterable[str] = (),
) -> str:
    """A small ini that includes the artifact's and runs `base_config` on our files.

    The TCP timers are compiled into the artifact's INET (TcpBaseAlg.cc,
    TcpConnection.h); an ini cannot set them (see build.sh's RTO variant).
    """
    lines = [
        "# Generated by reference/canary_artifact/to_db.py: the artifact's config, pktsim's flows.",
        f"include {base_ini}",
        "",
        f"[Config {name}]",
        f"extends = {base_config}",
        f"sim-time-limit = {sim_time_s!r}s",
        "repeat = 1",
        f'**.server[*].app[1..].distibutions_base_root = "{dist_root}/"',
        f"**.server[*].app[1..].num_requests_per_burst = {setup.requests_per_query}",
        f"**.server[*].app[1..].replyLength = {setup.reply_bytes}B",
        f"**.server[*].app[1..].requestLength = {setup.request_bytes}B",
        "**.server[*].app[1..].background_inter_arrival_time_multiplier = "
        f"{setup.background_inter_mult!r}",
        f"**.server[*].app[1..].background_flow_size_multiplier = {setup.background_flow_mult!r}",
        f"**.server[*].app[1..].bursty_inter_arrival_time_multiplier = {setup.query_inter_mult!r}",
        f"**.server[*].app[1..].bursty_flow_size_multiplier = {setup.query_flow_mult!r}",
        f"output-scalar-file = {out_prefix}.sca",
        f"output-vector-file = {out_prefix}.vec",
        f"cmdenv-output-file = {out_prefix}.out",
        f"eventlog-file = {out_prefix}.elog",
        f"snapshot-file = {out_prefix}.sna",
        "cmdenv-express-mode = true",
        "cmdenv-performance-display = false",
        "**.cmdenv-log-level = off",
    ]
    lines.extend(extra)
    lines.extend(STATISTICS)
    return "\n".join(lines) + "\n"


def flows_from_parquet(path: Path) -> list[Flow]:
    import polars as pl  # only the CLI needs it

    d = pl.read_parquet(
        path, columns=["flow_id", "src", "dst", "size_bytes", "start_ps", "tag", "query"]
    )
    return [
        Flow(
            flow_id=int(r["flow_id"]),
            src=int(r["src"]),
            dst=int(r["dst"]),
            size_bytes=int(r["size_bytes"]),
            start_ps=int(r["start_ps"]),
            tag=str(r["tag"]),
            query=None if r["query"] is None else int(r["query"]),
        )
        for r in d.iter_rows(named=True)
    ]


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(
        description="pktsim flows.parquet -> the Canary artifact's .db files"
    )
    ap.add_argument("config", type=Path, help="the pktsim config (TOML)")
    ap.add_argument("flows", type=Path, help="the run's flows.parquet")
    ap.add_argument("out", type=Path, help="folder to hold distributions/")
    a = ap.parse_args(argv)
    cfg = tomllib.loads(a.config.read_text(encoding="utf-8"))
    setup = setup_from_config(cfg)
    paths = write_dbs(build_tables(flows_from_parquet(a.flows), setup), a.out / "distributions")
    for p in paths:
        print(p)


if __name__ == "__main__":
    main()
