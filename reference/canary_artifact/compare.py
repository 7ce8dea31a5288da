"""Run one pktsim config and Canary's own artifact on the same flows; print both side by side.

    compare.py CONFIG --out DIR [--sim-time 0.1] [--artifact /work/ref/omnet/practical_deflection]

1. pktsim: `pktsim run CONFIG --out DIR/pktsim -q` under `/usr/bin/time`.
2. Its flows.parquet -> the artifact's workload .db files (to_db.py) and a small
   ini that includes the artifact's `omnetpp_1G.ini` and extends the scheme's
   config (DCTCP_ECMP, DCTCP_DIBS, DCTCP_VERTIGO, DCTCP_AIFO, DCTCP_QUANTILE_PD).
3. The artifact, from `dc_simulations/simulations/sims`:
   `../../src/dc_simulations -m -u Cmdenv -c PKTSIM -r 0 -n ..:../../src:../../../inet/src
   -l <inet>/src/INET DIR/artifact/run.ini`, under `/usr/bin/time`.
4. Both results: QCT per query (start to the last reply's end; the artifact's
   `flowEndedRequesterID` vector gives each reply's end, keyed by pktsim's flow id),
   queries completed, drops, deflections, timeouts; `DIR/compare.json` holds them.

The TCP timers are compiled into the artifact's INET: `--inet` picks the build
(build.sh makes `inet` with 10 ms and, with RTO_VARIANT=1, `inet_rto1s` with 1 s).
"""

from __future__ import annotations

import argparse
import json
import math
import os
import re
import subprocess
import sys
import tomllib
from collections import defaultdict
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from canary_artifact import to_db  # noqa: E402

# The repository's release build by default, wherever the checkout is.
PKTSIM = Path(
    os.environ.get("PKTSIM", Path(__file__).resolve().parents[2] / "target/release/pktsim")
)
REF = Path(os.environ.get("CANARY_REF", "/work/ref/omnet"))
BASE_CONFIGS = {
    "ecmp": "DCTCP_ECMP",
    "dibs": "DCTCP_DIBS",
    "vertigo": "DCTCP_VERTIGO",
    "aifo": "DCTCP_AIFO",
    "canary": "DCTCP_QUANTILE_PD",
}
TIME_FMT = "%U %S %e %M"


def scheme_of(config_path: Path, cfg: dict) -> str:
    name = cfg.get("name") or config_path.stem
    for s in BASE_CONFIGS:
        if re.search(rf"(^|[-_]){s}([-_]|$)", name) or config_path.stem.startswith(s):
            return s
    raise SystemExit(f"cannot tell the scheme of {config_path} (name {name!r})")


def timed(cmd: list[str], cwd: Path | None, log: Path, env=None, timeout=None) -> dict:
    tf = log.with_suffix(".time")
    full = ["/usr/bin/time", "-o", str(tf), "-f", TIME_FMT, *cmd]
    with open(log, "w") as out:
        try:
            rc = subprocess.run(
                full, cwd=cwd, stdout=out, stderr=subprocess.STDOUT, env=env, timeout=timeout
            ).returncode
        except subprocess.TimeoutExpired:
            rc = "timeout"
    res = {"rc": rc, "cmd": " ".join(cmd), "cwd": str(cwd) if cwd else None}
    try:
        last = [ln for ln in tf.read_text().splitlines() if ln.strip()][-1].split()
        res.update(
            user_s=float(last[0]),
            sys_s=float(last[1]),
            wall_s=float(last[2]),
            cpu_s=float(last[0]) + float(last[1]),
            peak_rss_kb=int(last[3]),
        )
    except (OSError, IndexError, ValueError):
        pass
    return res


def stats(xs: list[float]) -> dict:
    if not xs:
        return {"n": 0, "mean": None, "p99": None}
    s = sorted(xs)
    p99 = s[min(len(s) - 1, max(0, math.ceil(0.99 * len(s)) - 1))]
    return {"n": len(s), "mean": sum(s) / len(s), "p99": p99}


def parse_vec(path: Path, name: str) -> dict[int, float]:
    """value -> first time, over every vector called `name` (OMNeT++ 5 text .vec)."""
    ids = set()
    out: dict[int, float] = {}
    with open(path) as f:
        for line in f:
            if line.startswith("vector "):
                parts = line.split()
                if parts[3] == name or parts[3] == f"{name}:vector":
                    ids.add(parts[1])
            elif line and line[0].isdigit():
                parts = line.split()
                if parts[0] in ids and len(parts) >= 4:
                    v = int(float(parts[3]))
                    out.setdefault(v, float(parts[2]))
    return out


def parse_sca(path: Path) -> dict[str, dict[str, float]]:
    """scalar name -> {module: value}."""
    out: dict[str, dict[str, float]] = defaultdict(dict)
    with open(path) as f:
        for line in f:
            if line.startswith("scalar "):
                m = re.match(r'scalar\s+(\S+)\s+("[^"]*"|\S+)\s+(\S+)', line)
                if m:
                    try:
                        out[m.group(2).strip('"')][m.group(1)] = float(m.group(3))
                    except ValueError:
                        pass
    return out


def qct_from_ends(queries: list[dict], ends: dict[int, float]) -> tuple[list[float], int]:
    qcts = []
    for q in queries:
        t = [ends.get(i) for i in q["reply_ids"]]
        if all(x is not None for x in t):
            qcts.append(max(t) - q["start_ps"] / 1e12)
    return qcts, len(qcts)


LATE_S = 0.5


def late_replies(queries: list[dict], times: dict[int, float]) -> int:
    """Replies whose time (end, or first byte) is >= LATE_S after their query's start."""
    n = 0
    for q in queries:
        t0 = q["start_ps"] / 1e12
        n += sum(1 for i in q["reply_ids"] if i in times and times[i] - t0 >= LATE_S)
    return n


def pktsim_side(out: Path, flows_pq: Path, queries: list[dict]) -> dict:
    import polars as pl

    s = json.loads((out / "summary.json").read_text())
    d = pl.read_parquet(flows_pq, columns=["flow_id", "finish_ps", "tag", "size_bytes", "start_ps"])
    ends = {
        int(r[0]): r[1] / 1e12
        for r in d.select("flow_id", "finish_ps").iter_rows()
        if r[1] is not None
    }
    qcts, done = qct_from_ends(queries, ends)
    bg = d.filter((pl.col("tag") == "background") & pl.col("finish_ps").is_not_null())
    pc = s.get("protocol_counters", {})
    drops = s.get("drops", {})
    by_reason = defaultdict(int)
    for cls in drops.values():
        for k, v in cls.items():
            by_reason[k] += v
    bg_fct = ((bg["finish_ps"] - bg["start_ps"]) / 1e12).to_list()
    return {
        "qct_s": stats(qcts),
        "qcts": qcts,
        "bg_fcts": bg_fct,
        "queries": len(queries),
        "completed": done,
        "bg_fct_s": stats(bg_fct),
        "bg_done": bg.height,
        "drops_total": s.get("drops_total"),
        "drops_by_reason": {k: v for k, v in by_reason.items() if v},
        "drop_sites": s.get("drop_sites"),
        "deflections": s.get("deflected"),
        "data_timeouts": pc.get("timeouts"),
        "syn_timeouts": (pc.get("syn_retransmits") or 0),
        "synack_timeouts": pc.get("synack_retransmits"),
        "fast_recoveries": pc.get("fast_recoveries"),
        "replies_ending_late": late_replies(queries, ends),
        "replies_starting_late": None,
        "retransmits": s.get("retransmits"),
        "sim_time_s": (s.get("sim_time_us") or 0) / 1e6,
        "events": s.get("events"),
    }


def artifact_side(art: Path, queries: list[dict], flows: list[to_db.Flow]) -> dict:
    vec, sca = art / "run.vec", art / "run.sca"
    ends = parse_vec(vec, "flowEndedRequesterID") if vec.exists() else {}
    firsts = parse_vec(vec, "flowStartedRequesterID") if vec.exists() else {}
    qcts, done = qct_from_ends(queries, ends)
    late_end, late_start = late_replies(queries, ends), late_replies(queries, firsts)
    starts = {f.flow_id: f.start_ps / 1e12 for f in flows if f.tag == "background"}
    bg = [ends[i] - t for i, t in starts.items() if i in ends]
    sc = parse_sca(sca) if sca.exists() else {}

    def total(name, pred=lambda m: True):
        return sum(v for m, v in sc.get(name, {}).items() if pred(m))

    def is_server(m):
        return ".server[" in m

    def is_switch(m):
        return ".agg[" in m or ".spine[" in m

    tx_srv = total("txPk:count", is_server)
    rx_srv = total("rxPkOk:count", is_server)
    sw_drop_leaf = total("rxPkOk:count", lambda m: ".agg[" in m) - total(
        "txPk:count", lambda m: ".agg[" in m
    )
    sw_drop_spine = total("rxPkOk:count", lambda m: ".spine[" in m) - total(
        "txPk:count", lambda m: ".spine[" in m
    )
    syn = total("tcpConnectionSYNSent:count")
    # Active opens: one per background flow and one per request.
    opens = len(starts) + sum(len(q["servers"]) for q in queries)
    return {
        "qct_s": stats(qcts),
        "qcts": qcts,
        "bg_fcts": bg,
        "queries": len(queries),
        "completed": done,
        "bg_fct_s": stats(bg),
        "bg_done": len(bg),
        "drops_total": (tx_srv - rx_srv) if sc else None,
        "drops_by_site": {"leaf": sw_drop_leaf, "spine": sw_drop_spine} if sc else None,
        "deflections": total("FBPacketGenerated:count", is_switch) if sc else None,
        "data_timeouts": total("numRTOs") if sc else None,
        "syn_timeouts": (syn - opens) if syn else None,
        "syn_sent": syn or None,
        "fast_recoveries": total("numFastRetransmits") if sc else None,
        "replies_ending_late": late_end,
        "replies_starting_late": late_start if firsts else None,
        "retransmits": total("numSegmentRetransmissions") if sc else None,
    }


def fmt(x, scale=1.0, nd=4):
    if x is None:
        return "—"
    if isinstance(x, float):
        return f"{x * scale:.{nd}f}"
    return str(x)


def table(p: dict, a: dict) -> str:
    rows = [
        ("mean QCT (ms)", p["qct_s"]["mean"], a["qct_s"]["mean"], 1e3),
        ("p99 QCT (ms)", p["qct_s"]["p99"], a["qct_s"]["p99"], 1e3),
        ("queries completed", p["completed"], a["completed"], 1),
        ("queries", p["queries"], a["queries"], 1),
        ("mean bg FCT (ms)", p["bg_fct_s"]["mean"], a["bg_fct_s"]["mean"], 1e3),
        ("bg flows done", p["bg_done"], a["bg_done"], 1),
        ("drops (packets)", p["drops_total"], a["drops_total"], 1),
        ("deflections", p["deflections"], a["deflections"], 1),
        ("data timeouts", p["data_timeouts"], a["data_timeouts"], 1),
        ("SYN timeouts", p["syn_timeouts"], a["syn_timeouts"], 1),
        ("SYN-ACK timeouts", p["synack_timeouts"], None, 1),
        ("fast retransmits", p["fast_recoveries"], a["fast_recoveries"], 1),
        ("retransmitted segments", p["retransmits"], a["retransmits"], 1),
        (
            "replies ending ≥ 0.5 s after the query",
            p["replies_ending_late"],
            a["replies_ending_late"],
            1,
        ),
        (
            "replies whose first byte came ≥ 0.5 s after",
            p["replies_starting_late"],
            a["replies_starting_late"],
            1,
        ),
    ]
    out = ["| metric | pktsim | artifact | pktsim / artifact |", "|---|---|---|---|"]
    for name, x, y, sc in rows:
        ratio = "—"
        if isinstance(x, int | float) and isinstance(y, int | float) and y:
            ratio = f"{x / y:.3f}"
        out.append(f"| {name} | {fmt(x, sc, 3)} | {fmt(y, sc, 3)} | {ratio} |")
    out.append(f"| pktsim drops by reason | {p['drops_by_reason']} | | |")
    out.append(f"| artifact switch drops by tier | | {a['drops_by_site']} | |")
    return "\n".join(out)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("config", type=Path)
    ap.add_argument("--out", type=Path, required=True)
    ap.add_argument("--sim-time", type=float, default=0.1, help="artifact sim-time-limit, s")
    ap.add_argument("--artifact", type=Path, default=REF / "practical_deflection")
    ap.add_argument("--inet", type=Path, default=None, help="INET tree (default: the artifact's)")
    ap.add_argument("--omnetpp", type=Path, default=REF / "omnetpp-5.6.2")
    ap.add_argument("--ini", default="omnetpp_1G.ini")
    ap.add_argument("--skip-pktsim", action="store_true", help="reuse DIR/pktsim")
    ap.add_argument("--skip-artifact", action="store_true", help="reuse DIR/artifact")
    ap.add_argument("--timeout", type=float, default=None, help="artifact wall limit, s")
    ap.add_argument("--extra", action="append", default=[], help="extra ini line (repeatable)")
    a = ap.parse_args(argv)

    cfg_path = a.config.resolve()
    cfg = tomllib.loads(cfg_path.read_text(encoding="utf-8"))
    scheme = scheme_of(cfg_path, cfg)
    out = a.out.resolve()
    out.mkdir(parents=True, exist_ok=True)
    res = {"config": str(cfg_path), "scheme": scheme, "sim_time_s": a.sim_time}

    pk = out / "pktsim"
    if not a.skip_pktsim:
        pk.mkdir(exist_ok=True)
        res["pktsim_run"] = timed(
            [str(PKTSIM), "run", str(cfg_path), "--out", str(pk), "-q"], None, out / "pktsim.log"
        )
    elif (out / "compare.json").exists():
        res["pktsim_run"] = json.loads((out / "compare.json").read_text()).get("pktsim_run")
    flows = to_db.flows_from_parquet(pk / "flows.parquet")
    setup = to_db.setup_from_config(cfg)
    qflows = [f for f in flows if f.tag == "query"]
    queries = to_db.split_queries(qflows, setup)

    art = out / "artifact"
    sims = a.artifact / "Omnet_Sims/dc_simulations/simulations/sims"
    inet = (a.inet or a.artifact / "Omnet_Sims/inet").resolve()
    if not a.skip_artifact:
        art.mkdir(exist_ok=True)
        to_db.write_dbs(to_db.build_tables(flows, setup), art / "distributions")
        ini = to_db.ini_overrides(
            base_ini=(sims / a.ini).resolve(),
            base_config=BASE_CONFIGS[scheme],
            dist_root=art,
            sim_time_s=a.sim_time,
            out_prefix=art / "run",
            setup=setup,
            extra=a.extra,
        )
        (art / "run.ini").write_text(ini)
        env = dict(os.environ)
        env["PATH"] = f"{a.omnetpp / 'bin'}:{env.get('PATH', '')}"
        env["LD_LIBRARY_PATH"] = f"{inet / 'src'}:{a.omnetpp / 'lib'}:" + env.get(
            "LD_LIBRARY_PATH", ""
        )
        for p in ("run.vec", "run.sca", "run.out"):
            (art / p).unlink(missing_ok=True)
        cmd = [
            "../../src/dc_simulations", "-m", "-u", "Cmdenv", "-c", "PKTSIM", "-r", "0",
            "-n", f"..:../../src:{inet / 'src'}", "-l", str(inet / "src/INET"),
            str(art / "run.ini"),
        ]  # fmt: skip
        res["artifact_run"] = timed(cmd, sims, art / "stdout.log", env=env, timeout=a.timeout)
    elif (out / "compare.json").exists():
        res["artifact_run"] = json.loads((out / "compare.json").read_text()).get("artifact_run")

    res["pktsim"] = pktsim_side(pk, pk / "flows.parquet", queries)
    res["artifact"] = artifact_side(art, queries, flows)
    (out / "compare.json").write_text(json.dumps(res, indent=1))
    print(f"## {cfg_path.name} ({scheme}); artifact sim-time-limit {a.sim_time} s")
    print(table(res["pktsim"], res["artifact"]))
    for side in ("pktsim_run", "artifact_run"):
        r = res.get(side) or {}
        print(
            f"{side}: rc {r.get('rc')}, CPU {r.get('cpu_s')} s, wall {r.get('wall_s')} s, "
            f"peak RSS {r.get('peak_rss_kb')} kB"
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
