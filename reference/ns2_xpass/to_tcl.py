"""pktsim config + flow list -> ns-2 tcl script for ExpressPass's own simulator (ns2-xpass).

    python3 reference/ns2_xpass/to_tcl.py CONFIG.toml [--flows FLOWS] [--time-limit 1s]
        [--set alpha=0.0625 --set credit_limit_bytes=672 ...] [-o run.tcl]

Same topology (every link both ways, rate and delay), same switch buffer (each switch port's data
queue holds ``network.switch_buffer_bytes``; host NICs are unlimited, as pktsim's for non-TCP
protocols), same packet sizes (data = mss + header_bytes, credits 84 B), same senders, sizes and
start times. The ExpressPass parameters are ns-2's own defaults (``tcl/lib/ns-default.tcl``,
:data:`NS2_DEFAULTS`), changed one at a time with ``--set``.

The script writes, under ``outputs/`` of the directory ns runs in:

- ``fct.out`` and ``waste.out``: xpass.cc's own per-flow records (only for flows that finish);
- ``links.out``: a QueueMonitor per link direction (packets and bytes arrived, departed, dropped);
- ``flows.out``: a per-flow (fid) monitor on every link into a receiving host, snapshotted at the
  end minus that link's delay (what has reached the receiver by the end) and at the end;
- ``tcp.out`` (Cubic): each sender's highest cumulative ACK, data packets, retransmissions, RTOs.

ns-2 prints one ``data loss detected`` line per data packet its receiver discards (out of order:
xpass.cc recovers by go-back-N) and ``Data packet will be dropped.`` per data drop; keep stdout.

``--protocol cubic`` writes the same topology with ns-2's Linux-derived Cubic (Agent/TCP/Linux,
``select_ca cubic``, SACK sink) on drop-tail queues instead.

Pure: :func:`convert` maps a parsed config and a flow list to text; only :func:`main` reads files.
"""

from __future__ import annotations

import argparse
import csv
import re
import sys
import tomllib
from dataclasses import dataclass, fields, replace
from pathlib import Path

CREDIT_BYTES = 84  # pktsim's credit (wire.rs CREDIT_BYTES) = ns-2's min_credit_size_


class ConvertError(ValueError):
    """A config or flow list this converter cannot turn into an equivalent ns-2 script."""


@dataclass(frozen=True)
class XpassParams:
    """Agent/XPass and Queue/XPassDropTail settings; defaults are ns-2's ns-default.tcl."""

    alpha: float = 0.5  # Agent/XPass alpha_: initial credit rate / max
    w_init: float = 0.5  # w_init_
    min_w: float = 0.01  # min_w_
    target_loss_scaling: float = 0.125  # target_loss_scaling_
    min_jitter: float = -0.1  # min_jitter_ (credit gap scaled by 1 + U[min, max])
    max_jitter: float = 0.1  # max_jitter_
    min_credit_size: int = 84  # min_credit_size_
    max_credit_size: int = 84  # max_credit_size_
    min_ethernet_size: int = 84  # min_ethernet_size_ (control packets)
    retransmit_timeout: float = 0.1  # retransmit_timeout_ (NACK / credit-request resend)
    credit_stop_timeout: float = 0.002  # default_credit_stop_timeout_
    credit_limit_bytes: int = 840  # Queue/XPassDropTail credit_limit_ (10 credits)
    max_tokens_bytes: int = 840  # max_tokens_ (credit burst)
    cubic_beta: int = 819  # Cubic: tcp/linux/src/tcp_cubic.c beta, /1024 (Linux 2.6: 0.8)


NS2_DEFAULTS = XpassParams()


@dataclass(frozen=True)
class Link:
    a: str
    b: str
    rate_bps: float
    delay_s: float


@dataclass(frozen=True)
class Flow:
    src: int  # host index
    dst: int
    size_bytes: int
    start_ps: int


_RATE = {"bps": 1.0, "kbps": 1e3, "mbps": 1e6, "gbps": 1e9, "tbps": 1e12}
_TIME = {"ps": 1e-12, "ns": 1e-9, "us": 1e-6, "µs": 1e-6, "ms": 1e-3, "s": 1.0}


def _quantity(text: object, units: dict[str, float], what: str) -> float:
    m = re.fullmatch(r"\s*([0-9]+(?:\.[0-9]*)?(?:[eE][-+]?[0-9]+)?)\s*([A-Za-zµ]+)\s*", str(text))
    if not m or m.group(2).lower() not in units:
        raise ConvertError(f"{what}: {text!r} is not a number with a unit ({', '.join(units)})")
    return float(m.group(1)) * units[m.group(2).lower()]


def parse_rate(text: object, what: str = "rate") -> float:
    """'10Gbps' -> 1e10 (bit/s)."""
    return _quantity(text, _RATE, what)


def parse_time(text: object, what: str = "delay") -> float:
    """'0.852ms' -> 0.000852 (s)."""
    return _quantity(text, _TIME, what)


def _num(x: float) -> str:
    """A number as ns-2 reads it, exactly enough (seconds or bit/s)."""
    return f"{x:.12g}"


def topology(cfg: dict) -> tuple[list[str], list[str], list[Link]]:
    """Hosts, switches and links of an explicit topology."""
    topo = cfg.get("topology")
    if not isinstance(topo, dict):
        raise ConvertError("config has no [topology] table")
    if topo.get("kind") != "explicit":
        raise ConvertError(
            f"topology.kind must be 'explicit' (got {topo.get('kind')!r}): "
            "only explicit topologies are converted"
        )
    hosts = list(topo.get("hosts") or [])
    switches = list(topo.get("switches") or [])
    if not hosts:
        raise ConvertError("topology.hosts is empty")
    names = hosts + switches
    if len(set(names)) != len(names):
        raise ConvertError("topology: a node name appears twice")
    links = []
    for i, entry in enumerate(topo.get("links") or []):
        where = f"topology.links[{i}]"
        for k in ("a", "b", "rate", "delay"):
            if k not in entry:
                raise ConvertError(f"{where}: missing {k!r}")
        for k in ("a", "b"):
            if entry[k] not in names:
                raise ConvertError(f"{where}.{k}: unknown node {entry[k]!r}")
        if entry["a"] == entry["b"]:
            raise ConvertError(f"{where}: a link from {entry['a']!r} to itself")
        rate = parse_rate(entry["rate"], f"{where}.rate")
        if rate <= 0:
            raise ConvertError(f"{where}.rate must be positive")
        delay = parse_time(entry["delay"], f"{where}.delay")
        links.append(Link(entry["a"], entry["b"], rate, delay))
    if not links:
        raise ConvertError("topology.links is empty")
    return hosts, switches, links


def time_limit_s(cfg: dict) -> float:
    run = cfg.get("run") or {}
    if "time_limit" not in run:
        raise ConvertError("run.time_limit is required (ns-2 needs an end time)")
    t = parse_time(run["time_limit"], "run.time_limit")
    if t <= 0:
        raise ConvertError("run.time_limit must be positive")
    return t


def read_flows_csv(text: str, hosts: list[str]) -> list[Flow]:
    """pktsim's CSV workload: header src,dst,size_bytes,start_ns; hosts by index or name."""
    rows = list(csv.reader(text.splitlines()))
    if not rows or [c.strip() for c in rows[0]] != ["src", "dst", "size_bytes", "start_ns"]:
        raise ConvertError("flow CSV header must be src,dst,size_bytes,start_ns")
    out = []
    for line, r in enumerate(rows[1:], start=2):
        if not r or all(not c.strip() for c in r):
            continue
        if len(r) != 4:
            raise ConvertError(f"flows line {line}: expected 4 fields, got {len(r)}")
        try:
            size = int(r[2])
            start_ps = round(float(r[3]) * 1000)
        except ValueError as e:
            raise ConvertError(f"flows line {line}: {e}") from None
        out.append(Flow(_host(r[0], hosts, line), _host(r[1], hosts, line), size, start_ps))
    return out


def _host(text: str, hosts: list[str], line: int) -> int:
    t = text.strip()
    if t in hosts:
        return hosts.index(t)
    if t.isdigit() and int(t) < len(hosts):
        return int(t)
    raise ConvertError(f"flows line {line}: unknown host {t!r}")


def check_flows(flows: list[Flow], hosts: list[str]) -> None:
    if not flows:
        raise ConvertError("the flow list is empty")
    for i, f in enumerate(flows):
        for h in (f.src, f.dst):
            if not 0 <= h < len(hosts):
                raise ConvertError(f"flow {i}: host index {h} out of range (0..{len(hosts) - 1})")
        if f.src == f.dst:
            raise ConvertError(f"flow {i}: source and destination are the same host")
        if f.size_bytes <= 0:
            raise ConvertError(f"flow {i}: size_bytes must be positive")
        if f.start_ps < 0:
            raise ConvertError(f"flow {i}: negative start time")


def apply_overrides(p: XpassParams, items: list[str]) -> XpassParams:
    """`key=value` strings (field names of XpassParams) -> a changed copy."""
    types = {f.name: f.type for f in fields(XpassParams)}
    changes: dict[str, float | int] = {}
    for item in items:
        key, sep, val = item.partition("=")
        key = key.strip()
        if not sep or key not in types:
            raise ConvertError(f"--set {item!r}: expected KEY=VALUE, KEY one of {sorted(types)}")
        try:
            changes[key] = int(val) if types[key] in (int, "int") else float(val)
        except ValueError:
            raise ConvertError(f"--set {item!r}: {val!r} is not a number") from None
    return replace(p, **changes)


def convert(
    cfg: dict,
    flows: list[Flow],
    params: XpassParams = NS2_DEFAULTS,
    time_limit: float | None = None,
    protocol: str | None = None,
    snapshots: tuple[float, ...] = (),
) -> str:
    """The ns-2 script for ``cfg`` (a parsed pktsim TOML) and ``flows``; ``snapshots``: times
    (s) at which every link monitor is also written to outputs/links_at.out."""
    hosts, switches, links = topology(cfg)
    check_flows(flows, hosts)
    net = cfg.get("network") or {}
    mss = int(net.get("mss", 1460))
    hdr = int(net.get("header_bytes", 78))
    max_eth = mss + hdr
    buf = net.get("switch_buffer_bytes", 225_000)
    if "shared_buffer" in net:
        raise ConvertError("network.shared_buffer has no ns2-xpass counterpart")
    host_buf = net.get("host_buffer_bytes")
    proto = protocol or (cfg.get("transport") or {}).get("protocol")
    if proto not in ("expresspass", "cubic"):
        raise ConvertError(f"transport.protocol {proto!r}: only expresspass (or cubic) convert")
    tconf = cfg.get("transport") or {}
    if proto == "expresspass" and tconf.get("aeolus"):
        raise ConvertError("transport.aeolus (ExpressPass*) has no ns2-xpass counterpart")
    T = time_limit if time_limit is not None else time_limit_s(cfg)
    if params.min_credit_size > params.max_credit_size:
        raise ConvertError("min_credit_size must not exceed max_credit_size")
    avg_credit = (params.min_credit_size + params.max_credit_size) / 2

    nodes = hosts + switches
    idx = {n: i for i, n in enumerate(nodes)}
    host_set = set(hosts)
    receivers = {hosts[f.dst] for f in flows}
    host_rate: dict[str, float] = {}
    for ln in links:
        for x in (ln.a, ln.b):
            if x in host_set:
                host_rate.setdefault(x, ln.rate_bps)
    for h in {hosts[f.src] for f in flows} | receivers:
        if h not in host_rate:
            raise ConvertError(f"host {h!r} has no link")

    def credit_rate(rate_bps: float) -> int:
        # bytes/s of credits that make the reverse data fill the link (ns-default: 64734895 @10G)
        return int(rate_bps / 8 * avg_credit / (avg_credit + max_eth))

    L: list[str] = []
    w = L.append
    w(f"# generated by reference/ns2_xpass/to_tcl.py from pktsim config {cfg.get('name', '?')!r}")
    w(f"# protocol {proto}; {len(hosts)} hosts, {len(switches)} switches, {len(links)} links, "
      f"{len(flows)} flows; end {_num(T)} s")
    w("set ns [new Simulator]")
    w("file mkdir outputs")
    w("set fct_out [open outputs/fct.out w]")
    w('puts $fct_out "Flow ID,Flow Size (bytes),Flow Completion Time (secs)"')
    w("close $fct_out")
    w("set wst_out [open outputs/waste.out w]")
    w('puts $wst_out "Flow ID,Flow Size (bytes),Wasted Credits"')
    w("close $wst_out")
    w("set qtrace [open /dev/null w]")
    w("")
    if proto == "expresspass":
        w("# ExpressPass (ns-default.tcl values unless changed)")
        w(f"Agent/XPass set min_credit_size_ {params.min_credit_size}")
        w(f"Agent/XPass set max_credit_size_ {params.max_credit_size}")
        w(f"Agent/XPass set min_ethernet_size_ {params.min_ethernet_size}")
        w(f"Agent/XPass set max_ethernet_size_ {max_eth}")
        w(f"Agent/XPass set xpass_hdr_size_ {hdr}")
        w(f"Agent/XPass set alpha_ {_num(params.alpha)}")
        w(f"Agent/XPass set w_init_ {_num(params.w_init)}")
        w(f"Agent/XPass set min_w_ {_num(params.min_w)}")
        w(f"Agent/XPass set target_loss_scaling_ {_num(params.target_loss_scaling)}")
        w(f"Agent/XPass set retransmit_timeout_ {_num(params.retransmit_timeout)}")
        w(f"Agent/XPass set default_credit_stop_timeout_ {_num(params.credit_stop_timeout)}")
        w(f"Agent/XPass set min_jitter_ {_num(params.min_jitter)}")
        w(f"Agent/XPass set max_jitter_ {_num(params.max_jitter)}")
        w(f"Queue/XPassDropTail set credit_limit_ {params.credit_limit_bytes}")
        w(f"Queue/XPassDropTail set max_tokens_ {params.max_tokens_bytes}")
    else:
        w("# Cubic: ns-2's Linux congestion-control port (tcp/linux), SACK receiver")
        w(f"Agent/TCP set packetSize_ {mss}")
        w(f"Agent/TCP set tcpip_base_hdr_size_ {hdr}")
        # pktsim's receive window (transport.rcv_window_bytes, default 6 MiB) in packets
        rwnd = int(tconf.get("rcv_window_bytes", 6 << 20))
        w(f"Agent/TCP set window_ {max(1, rwnd // mss)}")
        w("Agent/TCP set windowInit_ 10")
        w("Agent/TCP set maxcwnd_ 1000000")
        w("Agent/TCP set minrto_ 0.2")
        w("Agent/TCP set tcpTick_ 0.000001")
        w("Agent/TCP set timestamps_ true")
        w("Agent/TCPSink set ts_echo_rfc1323_ true")
        w(f"Queue/DropTail set mean_pktsize_ {max_eth}")
    w("")
    w("# nodes: " + " ".join(f"{i}={n}" for n, i in idx.items()))
    for i in range(len(nodes)):
        w(f"set n({i}) [$ns node]")
    w("")
    mons: list[tuple[int, str, str, bool]] = []  # (k, from, to, per-flow monitor)
    for ln in links:
        for a, b in ((ln.a, ln.b), (ln.b, ln.a)):
            k = len(mons)
            if a in host_set:
                limit = host_buf if host_buf is not None else 2**31 - 1
            else:
                limit = buf
            per_flow = b in receivers
            mons.append((k, a, b, per_flow))
            qt = "XPassDropTail" if proto == "expresspass" else "DropTail"
            w(f"$ns simplex-link $n({idx[a]}) $n({idx[b]}) {_num(ln.rate_bps)} "
              f"{_num(ln.delay_s)} {qt} ;# {a} -> {b}")
            q = f"[[$ns link $n({idx[a]}) $n({idx[b]})] queue]"
            if proto == "expresspass":
                w(f"{q} set data_limit_ {limit}")
                w(f"{q} set token_refresh_rate_ {credit_rate(ln.rate_bps)}")
            else:
                w(f"{q} set limit_ {max(1, min(limit, 2**31 - 1) // max_eth)}")
            if per_flow:
                w(f"set fm({k}) [$ns makeflowmon Fid]")
                w(f"$ns attach-fmon [$ns link $n({idx[a]}) $n({idx[b]})] $fm({k})")
            else:
                w(f"set qm({k}) [$ns monitor-queue $n({idx[a]}) $n({idx[b]}) $qtrace]")
    w("")
    w("# flows: fid = row of the flow list")
    for i, f in enumerate(flows):
        s, d = hosts[f.src], hosts[f.dst]
        if proto == "expresspass":
            w(f"set snd({i}) [new Agent/XPass]; set rcv({i}) [new Agent/XPass]")
            w(f"$ns attach-agent $n({idx[s]}) $snd({i}); $ns attach-agent $n({idx[d]}) $rcv({i})")
            w(f"$snd({i}) set max_credit_rate_ {credit_rate(host_rate[s])}; "
              f"$rcv({i}) set max_credit_rate_ {credit_rate(host_rate[d])}")
            w(f"$snd({i}) set fid_ {i}; $rcv({i}) set fid_ {i}")
            w(f"$ns connect $snd({i}) $rcv({i})")
            w(f'$ns at {_num(f.start_ps * 1e-12)} "$snd({i}) advance-bytes {f.size_bytes}"'
              f" ;# {s} -> {d}")
        else:
            w(f"set snd({i}) [new Agent/TCP/Linux]; set rcv({i}) [new Agent/TCPSink/Sack1]")
            w(f"$ns attach-agent $n({idx[s]}) $snd({i}); $ns attach-agent $n({idx[d]}) $rcv({i})")
            w(f"$snd({i}) set fid_ {i}; $rcv({i}) set fid_ {i}")
            w(f"$ns connect $snd({i}) $rcv({i})")
            w(f'$ns at 0 "$snd({i}) select_ca cubic"')
            if params.cubic_beta != NS2_DEFAULTS.cubic_beta:
                w(f'$ns at 0 "$snd({i}) set_ca_param cubic beta {params.cubic_beta}"')
            pkts = -(-f.size_bytes // mss)
            w(f'$ns at {_num(f.start_ps * 1e-12)} "$snd({i}) advance {pkts}" ;# {s} -> {d}')
    w("")
    cols = "parrivals_ barrivals_ pdepartures_ bdepartures_ pdrops_ bdrops_"
    w("set lf [open outputs/links.out w]")
    w('puts $lf "link,from,to,parrivals,barrivals,pdepartures,bdepartures,pdrops,bdrops"')
    w("set ff [open outputs/flows.out w]")
    w('puts $ff "t,link,fid,parrivals,barrivals,pdepartures,bdepartures,pdrops,bdrops"')
    w("proc row {m} {")
    w("  set r {}")
    w(f"  foreach v {{{cols}}} {{ lappend r [$m set $v] }}")
    w('  return [join $r ","]')
    w("}")
    w("proc snap_flows {k tag} {")
    w("  global fm ff")
    w("  foreach fl [$fm($k) flows] {")
    w('    puts $ff "$tag,$k,[$fl set flowid_],[row $fl]"')
    w("  }")
    w("}")
    w("set sf [open outputs/links_at.out w]")
    w('puts $sf "t,link,from,to,parrivals,barrivals,pdepartures,bdepartures,pdrops,bdrops"')
    w("proc snap_links {t} {")
    w("  global qm fm sf")
    for k, a, b, per_flow in mons:
        m = f"$fm({k})" if per_flow else f"$qm({k})"
        w(f'  puts $sf "$t,{k},{a},{b},[row {m}]"')
    w("  flush $sf")
    w("}")
    for t in snapshots:
        if not 0 < t < T:
            raise ConvertError(f"snapshot time {t} s is not inside the run (0, {T})")
        w(f'$ns at {_num(t)} "snap_links {_num(t)}"')
    w("proc finish {} {")
    w("  global ns qm fm lf ff sf snd")
    for k, a, b, per_flow in mons:
        m = f"$fm({k})" if per_flow else f"$qm({k})"
        w(f'  puts $lf "{k},{a},{b},[row {m}]"')
        if per_flow:
            w(f"  snap_flows {k} end")
    if proto == "cubic":
        w("  set tf [open outputs/tcp.out w]")
        w('  puts $tf "fid,ack,ndatapack,nrexmitpack,nrexmit"')
        w("  foreach i [lsort -integer [array names snd]] {")
        w('    set r "$i"')
        w("    foreach v {ack_ ndatapack_ nrexmitpack_ nrexmit_} {")
        w('      append r ",[$snd($i) set $v]"')
        w("    }")
        w("    puts $tf $r")
        w("  }")
        w("  close $tf")
    w("  snap_links end")
    w("  close $lf; close $ff; close $sf")
    w('  puts "Simulation terminated successfully."')
    w("  exit 0")
    w("}")
    delay = {(ln.a, ln.b): ln.delay_s for ln in links} | {(ln.b, ln.a): ln.delay_s for ln in links}
    for k, a, b, per_flow in mons:
        if per_flow:
            w(f'$ns at {_num(max(0.0, T - delay[(a, b)]))} "snap_flows {k} arrived"')
    w(f'$ns at {_num(T)} "finish"')
    w("$ns run")
    return "\n".join(L) + "\n"


def load_flows(path: Path, hosts: list[str]) -> list[Flow]:
    """A CSV flow list, or a run's flows.parquet (src, dst, size_bytes, start_ps)."""
    if path.suffix == ".parquet":
        import polars as pl  # only needed for parquet input

        df = pl.read_parquet(path, columns=["src", "dst", "size_bytes", "start_ps"])
        return [Flow(int(s), int(d), int(z), int(t)) for s, d, z, t in df.iter_rows()]
    return read_flows_csv(path.read_text(), hosts)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("config", type=Path)
    ap.add_argument("--flows", type=Path, help="CSV or flows.parquet (default: the config's csv)")
    ap.add_argument("--time-limit", help="simulated time, e.g. 1s (default: run.time_limit)")
    ap.add_argument("--protocol", choices=["expresspass", "cubic"])
    ap.add_argument("--set", action="append", default=[], metavar="KEY=VALUE")
    ap.add_argument("--snap", default="", help="comma-separated times (s) for links_at.out")
    ap.add_argument("-o", "--out", type=Path)
    a = ap.parse_args(argv)
    try:
        cfg = tomllib.loads(a.config.read_text())
        hosts, _, _ = topology(cfg)
        fpath = a.flows
        if fpath is None:
            wl = [x for x in cfg.get("workload") or [] if x.get("kind") == "csv"]
            if len(wl) != 1:
                raise ConvertError("give --flows: the config has no single csv workload")
            fpath = a.config.parent / wl[0]["file"]
        flows = load_flows(fpath, hosts)
        t = parse_time(a.time_limit, "--time-limit") if a.time_limit else None
        snaps = tuple(float(x) for x in a.snap.split(",") if x.strip())
        text = convert(cfg, flows, apply_overrides(NS2_DEFAULTS, a.set), t, a.protocol, snaps)
    except (ConvertError, OSError, tomllib.TOMLDecodeError) as e:
        print(f"to_tcl: {e}", file=sys.stderr)
        return 2
    if a.out:
        a.out.write_text(text)
    else:
        sys.stdout.write(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
