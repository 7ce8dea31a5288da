"""One pktsim config on pktsim and on ExpressPass's own ns-2 (ns2-xpass), side by side.

    python3 reference/ns2_xpass/compare.py CONFIG.toml --out DIR [--time-limit 1s]
        [--set KEY=VALUE ...]          ns-2 parameter changes (to_tcl.XpassParams fields)
        [--pk 'OLD=>NEW' ...]          textual edits of pktsim's copy of the config
        [--protocol cubic] [--skip-pktsim | --skip-ns2]
        [--pktsim target/release/pktsim] [--ns /work/ref/ns2/src/ns]

Writes DIR/pktsim/ (pktsim's run), DIR/ns2/ (run.tcl, stdout.txt, outputs/), DIR/compare.json,
and prints the tables. Each simulator runs under ``/usr/bin/time -f "%U %S %e %MkB"``.

Figures, both sides over the whole run (0..T):
- goodput: payload bytes the receivers hold in order, × 8 / T (experiments/flashpass/summarize.py:
  summary.json throughput.goodput_gbps; pktsim's T is its simulated time, shorter than the
  time limit when every flow finishes, ns-2's is always the time limit). ns-2: per flow, the
  payload of the data packets that left the last link's queue by T − that link's delay
  (per-fid monitor), less the ones xpass.cc's receiver discarded (one stdout line ``data
  loss detected`` each: it recovers by go-back-N); an upper bound (duplicates below the
  expected sequence number are not printed). ns-2's FCT is xpass.cc's own (fct.out): taken
  when the credit stop reaches the receiver, which the sender sends up to an RTT before its
  last data arrive (early credit stop).
- delivered: payload of every data packet reaching a receiver (retransmissions and discarded
  packets included) × 8 / T: what the bottleneck carried.
- data loss: data packets dropped / data packets sent (summarize.py's figure). ns-2: from the
  per-link monitors, telling data from credits/control by size (credits and control are 84 B,
  data mss + header; a flow's last packet is shorter, an error below one packet per flow).
- credits: sent (arrived at the receivers' NIC queues), dropped, wasted (reached a sender with
  nothing to send: pktsim's counter; ns-2's waste.out, written only for flows that finish).
"""

from __future__ import annotations

import argparse
import json
import re
import shutil
import subprocess
import sys
import tomllib
from collections import Counter
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from ns2_xpass import to_tcl  # noqa: E402

REPO = Path(__file__).resolve().parents[2]
TIME_FMT = "%U %S %e %MkB"


def timed(cmd: list[str], cwd: Path, stdout: Path) -> dict:
    """Run under /usr/bin/time; CPU (user+sys) s, wall s, peak RSS kB."""
    tfile = stdout.with_name(stdout.stem + ".time")
    with stdout.open("w") as out:
        r = subprocess.run(
            ["/usr/bin/time", "-f", TIME_FMT, "-o", str(tfile), *cmd],
            cwd=cwd, stdout=out, stderr=subprocess.PIPE, text=True,
        )
    if r.returncode != 0:
        raise SystemExit(f"{cmd[0]} failed ({r.returncode}): {r.stderr[-2000:]}")
    u, s, e, m = tfile.read_text().split()[-4:]
    return {"user_s": float(u), "sys_s": float(s), "cpu_s": float(u) + float(s),
            "wall_s": float(e), "peak_rss_mb": int(m.removesuffix("kB")) / 1024}


def pk_config(src: Path, dst_dir: Path, time_limit: str | None, edits: list[str]) -> Path:
    """pktsim's copy of the config: shorter time limit and textual edits; its CSV beside it."""
    text = src.read_text()
    if time_limit:
        text, n = re.subn(r'(?m)^time_limit\s*=\s*"[^"]*"', f'time_limit = "{time_limit}"', text)
        if n != 1:
            raise SystemExit("could not set run.time_limit in the config copy")
    for e in edits:
        old, sep, new = e.partition("=>")
        if not sep or old not in text:
            raise SystemExit(f"--pk {e!r}: {old!r} not in the config")
        text = text.replace(old, new.replace("\\n", "\n"), 1)
    dst_dir.mkdir(parents=True, exist_ok=True)
    cfg = tomllib.loads(text)
    for w in cfg.get("workload") or []:
        if w.get("kind") == "csv":
            shutil.copy(src.parent / w["file"], dst_dir / Path(w["file"]).name)
    out = dst_dir / src.name
    out.write_text(text)
    return out


def pktsim_figures(run: Path) -> dict:
    import polars as pl

    s = json.loads((run / "summary.json").read_text())
    T = s["sim_time_us"] / 1e6
    sent = s["conservation"]["sent"]["data"]
    lost = sum(s["drops"]["data"].values())
    c = s.get("protocol_counters", {})
    cfg = tomllib.loads((run / "config.toml").read_text())
    mss = cfg["network"]["mss"]
    df = pl.read_parquet(run / "flows.parquet")
    flows = {
        (r["src"], r["dst"], r["start_ps"]): {
            "goodput_gbps": r["bytes_received"] * 8 / T / 1e9, "drops": r["drops"],
            "retransmits": r["retransmits"], "fct_ms": None if r["fct_ps"] is None
            else r["fct_ps"] / 1e9,
        }
        for r in df.iter_rows(named=True)
    }
    return {
        "T": T,
        "goodput_gbps": s["throughput"]["goodput_gbps"],
        "delivered_gbps": s["conservation"]["delivered"]["data"] * mss * 8 / T / 1e9,
        "data_sent": sent, "data_dropped": lost, "data_loss_pct": 100 * lost / max(sent, 1),
        "discarded": 0,
        "credits_sent": c.get("credits_sent"),
        "credits_dropped": sum(s["drops"]["control"].values()),
        "credits_wasted": c.get("credits_wasted"),
        "timeouts": c.get("timeouts", 0),
        "flows": flows,
    }


def _csv(path: Path) -> list[dict]:
    lines = path.read_text().splitlines()
    head = lines[0].split(",")
    return [dict(zip(head, ln.split(","), strict=True)) for ln in lines[1:] if ln]


def split_sizes(p: int, b: int, small: int, big: int) -> tuple[int, int]:
    """Packets (p) and bytes (b) of small and big packets -> (n_small, n_big)."""
    n_big = max(0, min(p, round((b - small * p) / (big - small))))
    return p - n_big, n_big


def ns2_figures(d: Path, cfg: dict, flows: list[to_tcl.Flow], T: float, proto: str) -> dict:
    net = cfg.get("network") or {}
    mss, hdr = int(net.get("mss", 1460)), int(net.get("header_bytes", 78))
    big = mss + hdr
    hosts, _, _ = to_tcl.topology(cfg)
    out = d / "outputs"
    links = _csv(out / "links.out")
    data_sent = data_drop = cred_sent = cred_drop = 0
    receivers = {hosts[f.dst] for f in flows}
    small = 84 if proto == "expresspass" else 40  # credits/control vs TCP ACKs
    for ln in links:
        p, b = int(ln["parrivals"]), int(ln["barrivals"])
        pd, bd = int(ln["pdrops"]), int(ln["bdrops"])
        ns_, nb = split_sizes(p, b, small, big)
        ds_, db = split_sizes(pd, bd, small, big)
        data_drop += db
        cred_drop += ds_
        if ln["from"] in hosts and ln["from"] not in receivers:
            data_sent += nb
        if ln["from"] in receivers:
            cred_sent += ns_
    discards = Counter()
    for line in (d / "stdout.txt").open():
        m = re.match(r"\[(\d+)\] [0-9.]+: data loss detected", line)
        if m:
            discards[int(m.group(1))] += 1
    # first record per flow (a flow that restarts after a tail loss writes another)
    fct: dict[int, float] = {}
    for r in _csv(out / "fct.out"):
        fct.setdefault(int(r["Flow ID"]), float(r["Flow Completion Time (secs)"]))
    wasted = sum(int(r["Wasted Credits"]) for r in _csv(out / "waste.out"))
    per = {}
    delivered = 0
    for r in _csv(out / "flows.out"):
        if r["t"] != "arrived":
            continue
        fid = int(r["fid"])
        pctl, pdata = split_sizes(int(r["pdepartures"]), int(r["bdepartures"]), small, big)
        payload = int(r["bdepartures"]) - small * pctl - hdr * pdata
        if proto != "expresspass":
            pdata, payload = int(r["pdepartures"]), int(r["pdepartures"]) * mss
        delivered += payload
        f = flows[fid]
        # not fct.out's size: xpass.cc writes recv_next_ when the credit stop arrives, which the
        # sender sends early (credits of the last RTT cover what is left), before the last data
        good = min(f.size_bytes, max(0, payload - discards[fid] * mss))
        per[fid] = {"goodput_gbps": good * 8 / T / 1e9, "discarded": discards[fid],
                    "drops": None, "fct_ms": fct[fid] * 1e3 if fid in fct else None}
    for r in _csv(out / "flows.out"):
        if r["t"] == "end" and int(r["fid"]) in per:
            per[int(r["fid"])]["drops"] = split_sizes(
                int(r["pdrops"]), int(r["bdrops"]), small, big)[1]
    # the paper's "throughput" reads as link utilisation: wire bytes leaving the busiest link
    # into a receiver between 1 s and T
    util = None
    at = d / "outputs" / "links_at.out"
    if at.exists():
        rows = _csv(at)
        t1 = {r["link"]: int(r["bdepartures"]) for r in rows if r["t"] == "1"}
        te = {r["link"]: int(r["bdepartures"]) for r in rows if r["t"] == "end"}
        into = [k for k in t1 if next(r for r in rows if r["link"] == k)["to"] in receivers]
        if into:
            util = max((te[k] - t1[k]) * 8 / (T - 1.0) / 1e9 for k in into)
    timeouts = None
    if proto != "expresspass":  # TCP: in-order bytes from the senders' cumulative ACKs at T
        timeouts = 0
        for r in _csv(out / "tcp.out"):
            fid = int(r["fid"])
            good = min(flows[fid].size_bytes, (int(r["ack"]) + 1) * mss)
            per.setdefault(fid, {})["goodput_gbps"] = good * 8 / T / 1e9
            timeouts += int(r["nrexmit"])
    goodput = sum(v["goodput_gbps"] for v in per.values())
    return {
        "T": T, "goodput_gbps": goodput, "delivered_gbps": delivered * 8 / T / 1e9,
        "data_sent": data_sent, "data_dropped": data_drop,
        "data_loss_pct": 100 * data_drop / max(data_sent, 1),
        "discarded": sum(discards.values()),
        "credits_sent": cred_sent if proto == "expresspass" else None,
        "credits_dropped": cred_drop if proto == "expresspass" else None,
        "credits_wasted": wasted if proto == "expresspass" else None,
        "timeouts": timeouts,
        "wire_util_1s_gbps": util,
        "flows": {(f.src, f.dst, f.start_ps): per.get(i, {}) for i, f in enumerate(flows)},
    }


def fmt(x, spec=".3f"):
    if x is None:
        return "-"
    return format(x, spec) if isinstance(x, float) else str(x)


def table(pk: dict | None, ns: dict | None, cfg: dict, flows: list[to_tcl.Flow]) -> str:
    rows = [
        ("goodput (Gbit/s)", "goodput_gbps", ".3f"),
        ("delivered at receivers, incl. discarded (Gbit/s)", "delivered_gbps", ".3f"),
        ("data packets sent", "data_sent", "d"),
        ("data packets dropped", "data_dropped", "d"),
        ("data loss (%)", "data_loss_pct", ".3f"),
        ("data packets discarded by the receiver", "discarded", "d"),
        ("credits sent", "credits_sent", "d"),
        ("credits dropped", "credits_dropped", "d"),
        ("credits wasted", "credits_wasted", "d"),
        ("timeouts (RTOs)", "timeouts", "d"),
        ("ns-2: bottleneck wire utilisation 1 s..T (Gbit/s)", "wire_util_1s_gbps", ".3f"),
        ("CPU s (user+sys)", "cpu_s", ".2f"),
        ("wall s", "wall_s", ".2f"),
        ("peak RSS (MB)", "peak_rss_mb", ".0f"),
    ]
    out = ["| figure | pktsim | ns2-xpass | pktsim / ns-2 − 1 |", "|---|---|---|---|"]
    for label, k, spec in rows:
        a = (pk or {}).get(k)
        b = (ns or {}).get(k)
        rel = f"{100 * (a / b - 1):+.1f} %" if isinstance(a, (int, float)) and b else "-"
        out.append(f"| {label} | {fmt(a, spec)} | {fmt(b, spec)} | {rel} |")
    hosts, _, links = to_tcl.topology(cfg)
    delay = {}
    for ln in links:
        for h in (ln.a, ln.b):
            if h in hosts:
                delay.setdefault(h, ln.delay_s)
    out += ["", "| flow | src | access delay (ms) | start (ms) | pktsim Gbit/s | ns-2 Gbit/s "
            "| pktsim drops (credits + data) | ns-2 data drops | ns-2 discarded "
            "| pktsim FCT (ms) | ns-2 FCT at credit stop (ms) |",
            "|---|---|---|---|---|---|---|---|---|---|---|"]
    for i, f in enumerate(flows):
        key = (f.src, f.dst, f.start_ps)
        a = (pk or {}).get("flows", {}).get(key, {})
        b = (ns or {}).get("flows", {}).get(key, {})
        out.append(
            f"| {i} | {hosts[f.src]} | {1e3 * delay[hosts[f.src]]:.3f} | {f.start_ps / 1e9:.1f} "
            f"| {fmt(a.get('goodput_gbps'))} | {fmt(b.get('goodput_gbps'))} "
            f"| {fmt(a.get('drops'))} | {fmt(b.get('drops'))} | {fmt(b.get('discarded'))} "
            f"| {fmt(a.get('fct_ms'), '.2f')} | {fmt(b.get('fct_ms'), '.2f')} |"
        )
    return "\n".join(out)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("config", type=Path)
    ap.add_argument("--out", type=Path, required=True)
    ap.add_argument("--time-limit")
    ap.add_argument("--set", action="append", default=[], metavar="KEY=VALUE")
    ap.add_argument("--pk", action="append", default=[], metavar="OLD=>NEW")
    ap.add_argument("--protocol", choices=["expresspass", "cubic"])
    ap.add_argument("--skip-pktsim", action="store_true")
    ap.add_argument("--skip-ns2", action="store_true")
    ap.add_argument("--pktsim", default=str(REPO / "target/release/pktsim"))
    ap.add_argument("--ns", default="/work/ref/ns2/src/ns")
    a = ap.parse_args(argv)
    out = a.out.resolve()
    cfgp = pk_config(a.config.resolve(), out / "config", a.time_limit, a.pk)
    cfg = tomllib.loads(cfgp.read_text())
    hosts, _, _ = to_tcl.topology(cfg)
    wl = [w for w in cfg.get("workload") or [] if w.get("kind") == "csv"]
    flows = to_tcl.load_flows(cfgp.parent / Path(wl[0]["file"]).name, hosts)
    T = to_tcl.time_limit_s(cfg)
    proto = a.protocol or cfg["transport"]["protocol"]
    pk = ns = None
    if not a.skip_pktsim:
        d = out / "pktsim"
        shutil.rmtree(d, ignore_errors=True)
        t = timed([a.pktsim, "run", str(cfgp), "--out", str(d), "-q"], out, out / "pktsim.txt")
        pk = pktsim_figures(d) | t
    if not a.skip_ns2:
        d = out / "ns2"
        shutil.rmtree(d, ignore_errors=True)
        d.mkdir(parents=True)
        params = to_tcl.apply_overrides(to_tcl.NS2_DEFAULTS, a.set)
        snaps = (1.0,) if T > 1.0 else ()
        (d / "run.tcl").write_text(to_tcl.convert(cfg, flows, params, T, proto, snaps))
        t = timed([a.ns, "run.tcl"], d, d / "stdout.txt")
        ns = ns2_figures(d, cfg, flows, T, proto) | t
    text = table(pk, ns, cfg, flows)
    print(f"config {a.config} (T = {T} s, protocol {proto}); "
          f"ns-2 --set {a.set}; pktsim --pk {a.pk}")
    print(text)

    def js(r):
        if r is None:
            return None
        return r | {"flows": {f"{k[0]}-{k[1]}-{k[2]}": v for k, v in r["flows"].items()}}

    (out / "compare.json").write_text(json.dumps(
        {"config": str(a.config), "set": a.set, "pk": a.pk, "pktsim": js(pk), "ns2": js(ns)},
        indent=1))
    (out / "compare.md").write_text(text + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
