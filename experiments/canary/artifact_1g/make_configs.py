"""Write pktsim configs mirroring Canary's artifact at 1 Gbit/s (issue 50).

The artifact (hopnets/practical_deflection @ 137c952, `Omnet_Sims/dc_simulations/
simulations/sims/leafspine1G.ned` + `omnetpp_1G.ini`): leaf-spine, 4 spines x
8 leaves x 40 servers, every link 1 Gbit/s (host links 1 us, fabric 5 us),
50,000 B per switch port, DCTCP (ECN mark at 20 packets, g = 1/16), TTL 250.
Per server: one background app (cache-follower sizes; the .db files are ours,
written by reference/canary_artifact/to_db.py from pktsim's flow list) and
one query app: 250 B requests to 40 servers, 20,000 B replies after a
normal(20 us, 3 us) service delay.

TCP as the artifact's INET sets it ([General] of omnetpp_1G.ini and
inet/.../tcp/flavours/TcpBaseAlg.cc, TcpConnection.h): MSS 1452 with the
12 B timestamp option inside it, so 1,440 payload bytes per full segment;
IW 10; no delayed ACK; Nagle on; receive window 65,535 B, no window
scaling; SACK off; limited transmit off; three-way handshake; initial RTO
= min RTO = SYN RTO = 10 ms, max 240 s; no RFC 6298 5.7 3-s fallback after a
lost SYN (INET has none). Variant `_rto1s`: the paper's 1 s initial (and
SYN) RTO, min 10 ms.

Wire size of a full data packet: 1,440 payload + 20 IP + 32 TCP (with
timestamps) + 18 Ethernet header/FCS + 8 preamble/SFD + 12 inter-frame gap
= 1,530 B; the rank-marking schemes (Vertigo, Canary, AIFO) add the 8 B V2
option (1,538 B). pktsim has one `header_bytes` for both wire time and
buffer occupancy; INET counts the frame (without preamble/IFG) in the
queue. Known differences kept: one link delay (3 us everywhere gives the
same 12 us one-way across the fabric as 1 + 5 + 5 + 1 us; intra-leaf paths
are 6 us instead of 2 us); the artifact's client sends the request and
the reply flows back on the same connection, pktsim's query workload does
the same, but pktsim's background flow starts at the sender without a
request.

Run: python3 make_configs.py [--window-ms 10]
"""

import argparse
from pathlib import Path

HERE = Path(__file__).resolve().parent
LOADS = [55, 95]
BACKGROUND = 0.5
HOSTS = 8 * 40
HOST_BPS = 1e9
PAYLOAD = 1440
HDR_PLAIN = 20 + 32 + 18 + 8 + 12  # 90 B
HDR_MARKED = HDR_PLAIN + 8  # V2 marking option
# Mean wire bytes of a cache-follower flow: 712,573.5 B + a header per packet.
BG_WIRE = 712_573.5 + (712_573.5 / PAYLOAD) * HDR_PLAIN
SERVERS = 40
REPLY = 20_000
REPLY_WIRE = REPLY + 14 * HDR_PLAIN

SCHEMES = {
    "ecmp": dict(
        what="DCTCP_ECMP: ECMP, FIFO drop-tail V2PIFO queues with ECN at 20 packets",
        lb="ecmp",
        queue='{ kind = "ecn", k_packets = 20 }',
        refusal="drop",
        rank=False,
        reorder=False,
        fast_retransmit=True,
    ),
    "aifo": dict(
        what="DCTCP_AIFO: ECMP, AIFO admission (k = 0.1, window 20, 1 sample in 15), drop; "
        "300,000 B per port (the 1G ini keeps the 10G per_queue_dataCapacity here)",
        buffer=300_000,
        lb="ecmp",
        queue='{ kind = "aifo", window = 20, sample = 15, k = 0.1, k_packets = 20 }',
        refusal="drop",
        rank=True,
        reorder=False,
        fast_retransmit=True,
    ),
    "dibs": dict(
        what="DCTCP_DIBS: ECMP, deflect to a random non-full switch-facing port; FRs off",
        lb="ecmp",
        queue='{ kind = "ecn", k_packets = 20 }',
        refusal="deflect",
        rank=False,
        reorder=False,
        fast_retransmit=False,
    ),
    "vertigo": dict(
        what="DCTCP_VERTIGO: power of two, SRPT push-out queues, deflect to the "
        "emptier of two random switch-facing ports, ordering shim 1.2 ms",
        lb="power_of_two",
        queue='{ kind = "vertigo", k_packets = 20 }',
        refusal="deflect_two_choices",
        rank=True,
        reorder=True,
        fast_retransmit=True,
    ),
    "canary": dict(
        what="DCTCP_QUANTILE_PD: power of two, quantile admission (k = 0.9, window 20, "
        "1 sample in 20) on FIFO, early deflection to the emptier admitting one of "
        "two random switch-facing ports, else drop; ordering shim 1.2 ms",
        lb="power_of_two",
        queue='{ kind = "aifo", window = 20, sample = 20, k = 0.9, k_packets = 20 }',
        refusal="deflect_two_admitting",
        rank=True,
        reorder=True,
        fast_retransmit=True,
    ),
}

RTO = {
    "": ("10ms", "3s", "# TCP timers as the artifact's INET: initial = min = SYN RTO = 10 ms.\n"),
    "_rto1s": ("1s", "10s", "# The paper's large RTO: initial (and SYN) RTO 1 s, min 10 ms.\n"),
}


# Load relative to the fabric (`_fab_` configs): the leaf's uplinks (4 x 1 Gbit/s) carry
# `load` of their capacity when every host offers `load * FABRIC_SHARE` of its link
# (inter-leaf share 280/319 of uniform traffic). The host-relative configs load the
# 10:1 oversubscribed fabric ~5-9x past its capacity during their arrival window.
FABRIC_SHARE = (4 * 1e9) / (40 * HOST_BPS) / ((HOSTS - 40) / (HOSTS - 1))


def config(
    name: str, s: dict, load: int, variant: str, window_s: float, basis: str = "host"
) -> str:
    initial, limit, note = RTO[variant.replace("_fab", "")]
    scale = FABRIC_SHARE if basis == "fabric" else 1.0
    query_load = (load / 100 - BACKGROUND) * scale
    bg_load = BACKGROUND * scale
    bg_flows = round(bg_load * HOSTS * HOST_BPS / 8 / BG_WIRE * window_s)
    queries = max(1, round(query_load * HOSTS * HOST_BPS / 8 / (SERVERS * REPLY_WIRE) * window_s))
    if basis == "fabric":
        note += (
            f"# Load relative to the fabric: {load} % of the leaf uplinks' capacity "
            f"({bg_load:.4f} + {query_load:.4f} of each host link).\n"
        )
    tr = [
        'protocol = "dctcp"',
        "init_cwnd = 10",
        f'initial_rto = "{initial}"',
        'min_rto = "10ms"',
        'max_rto = "240s"',
        "rcv_window_bytes = 65535",
        "sack = false",
        "limited_transmit = false",
        "handshake = true",
        f'syn_fallback_rto = "{initial}"',
    ]
    if s["rank"]:
        tr.append('rank = "remaining_bytes"')
    if s["reorder"]:
        tr.append('reorder_window = "1200us"')
    if not s["fast_retransmit"]:
        tr.append("fast_retransmit = false")
    tr_text = "\n".join(tr)
    hdr = HDR_MARKED if s["rank"] else HDR_PLAIN
    return f"""# Canary's artifact at 1 Gbit/s (omnetpp_1G.ini), {s["what"]}.
# Total load {load} % = 50 % background (cache follower, Poisson, all-to-all)
# + {load - 50} % queries (250 B requests to {SERVERS} servers, {REPLY} B replies).
# {window_s * 1e3:g} ms of arrivals. Generated by artifact_1g/make_configs.py.
{note}name = "canary-artifact1g-{name}{variant.replace("_", "-")}-{load}"
seed = 1

[topology]
kind = "leaf_spine"
spines = 4
leaves = 8
hosts_per_leaf = 40
host_rate = "1Gbps"
fabric_rate = "1Gbps"
link_delay = "3us"

[network]
load_balancing = "{s["lb"]}"
mss = {PAYLOAD}
header_bytes = {hdr}
switch_queue = {s["queue"]}
switch_buffer_bytes = {s.get("buffer", 50_000)}
refusal = "{s["refusal"]}"
hop_limit = 250

[transport]
{tr_text}

[run]
time_limit = "{limit}"

[[workload]]
kind = "poisson"
cdf = "cache_follower"
load = {bg_load:.4f}
flows = {bg_flows}
tag = "background"

[[workload]]
kind = "queries"
load = {query_load:.4f}
servers = {SERVERS}
request_bytes = 250
reply_bytes = {REPLY}
reply_delay = "20us"
queries = {queries}
tag = "query"
"""


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--window-ms", type=float, default=10.0, help="arrival window (ms)")
    ap.add_argument(
        "--fab-window-ms", type=float, default=100.0, help="arrival window of the _fab_ configs"
    )
    a = ap.parse_args()
    for variant in RTO:
        for name, s in SCHEMES.items():
            for load in LOADS:
                (HERE / f"{name}{variant}_{load}.toml").write_text(
                    config(name, s, load, variant, a.window_ms / 1e3), encoding="utf-8"
                )
                (HERE / f"{name}{variant}_fab_{load}.toml").write_text(
                    config(name, s, load, variant + "_fab", a.fab_window_ms / 1e3, "fabric"),
                    encoding="utf-8",
                )


if __name__ == "__main__":
    main()
