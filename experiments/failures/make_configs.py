"""Write the failure experiment's configs (6 designs x 3 scenarios, plus
DCTCP+ECMP with routing that never reacts) into this folder.

Setup (issue 32, item 4): the pHost paper's 144-host leaf-spine (9 leaves x
16 hosts, 4 spines, 10 Gbit/s hosts, 40 Gbit/s fabric, 0.2 us per link,
cut-through; the topology lines of ../phost/websearch_*.toml), web search
flow sizes (DCTCP paper), Poisson all-to-all arrivals at load 0.6 for about
50 ms (FLOWS below), seed 1. Scenarios:

- ``baseline``: no events (not for ``phost_rts``, identical there);
- ``linkdown``: link leaf0-spine0 down at 10 ms, up at 30 ms;
- ``gray``: the same link loses 1 % of its packets (both ways) from 10 ms
  to 30 ms, then is lossless again.

Routing learns of a failed (or recovered) link 1 ms after it happens
(``failure_detection = "1ms"``, see README.md); a lossy link is not a
failed one, so routing never avoids the gray link. ``ecmp_never_linkdown``
is DCTCP+ECMP's link failure with ``failure_detection = "never"``: what
routing's reaction buys.

Run: python3 make_configs.py
"""

from pathlib import Path

HERE = Path(__file__).resolve().parent

HOSTS = 9 * 16
HOST_BPS = 10e9
LOAD = 0.6
ARRIVALS_S = 0.050
# Web search: mean 1,665,831 payload bytes in about 1,141 packets of 1460 B
# (../../workloads/websearch.cdf); 40 header bytes per packet on the wire,
# as the Poisson generator counts offered load.
MEAN_WIRE = 1_665_831 + 1141 * 40
FLOWS = round(LOAD * HOSTS * HOST_BPS / 8 / MEAN_WIRE * ARRIVALS_S)
TIME_LIMIT = "300ms"
DETECTION = "1ms"
LINK = '["leaf0", "spine0"]'

TOPOLOGY = """[topology]
kind = "leaf_spine"
spines = 4
leaves = 9
hosts_per_leaf = 16
host_rate = "10Gbps"
fabric_rate = "40Gbps"
link_delay = "0.2us"
"""

# DCTCP's settings for this fabric (../phost/websearch_dctcp.toml): K = 15
# packets, 225 KB per port, IW 12, min RTO 200 us. DIBS and Canary keep them
# and add their switch behaviour from ../canary/make_configs.py, with K and
# the buffer of this fabric instead of the Canary paper's 65 packets and
# 300 KB; Canary's ordering timer is cut from 360 us (15 of its paper's
# 24 us RTTs, below its 10 ms min RTO) to 100 us, below the 200 us min RTO.
DCTCP = [
    'protocol = "dctcp"',
    "init_cwnd = 12",
    'min_rto = "200us"',
]

DESIGNS = {
    "ecmp": dict(
        what="DCTCP with ECMP (per-flow hashing), drop-tail ECN queues",
        network=[
            'load_balancing = "ecmp"',
            'switch_queue = { kind = "ecn", k_packets = 15 }',
            "switch_buffer_bytes = 225000",
        ],
        transport=DCTCP,
    ),
    "spray": dict(
        what="DCTCP with per-packet random spraying, drop-tail ECN queues",
        network=[
            'load_balancing = "spray"',
            'switch_queue = { kind = "ecn", k_packets = 15 }',
            "switch_buffer_bytes = 225000",
        ],
        transport=DCTCP,
    ),
    "pfabric": dict(
        what="pFabric (../phost/websearch_pfabric.toml): IW 12, max window 23, "
        "RTO 45 us, pFabric queues of 36 KB, round-robin spraying",
        network=[
            'load_balancing = "spray_round_robin"',
            'switch_queue = { kind = "pfabric" }',
            "switch_buffer_bytes = 36000",
            'host_queue = { kind = "pfabric" }',
        ],
        transport=[
            'protocol = "pfabric"',
            "init_cwnd = 12",
            "max_cwnd = 23",
            'rto = "45us"',
        ],
    ),
    "phost": dict(
        what="pHost (../phost/websearch_phost.toml): free tokens, token pacing "
        "at 1540 B, pFabric queues of 36 KB, round-robin spraying",
        network=[
            'load_balancing = "spray_round_robin"',
            'switch_queue = { kind = "pfabric" }',
            "switch_buffer_bytes = 36864",
        ],
        transport=['protocol = "phost"', "token_slot_bytes = 1540"],
    ),
    "phost_rts": dict(
        what="pHost as above, with an RTS timer (rts_timeout = 100 packet "
        "times, doubled per resend): not in the authors' simulator",
        network=[
            'load_balancing = "spray_round_robin"',
            'switch_queue = { kind = "pfabric" }',
            "switch_buffer_bytes = 36864",
        ],
        transport=['protocol = "phost"', "token_slot_bytes = 1540", "rts_timeout = 100.0"],
    ),
    "dibs": dict(
        what="DIBS: DCTCP with ECMP, a full port deflects to a random non-full "
        "switch-facing port; fast retransmit off",
        network=[
            'load_balancing = "ecmp"',
            'switch_queue = { kind = "ecn", k_packets = 15 }',
            "switch_buffer_bytes = 225000",
            'refusal = "deflect"',
            "hop_limit = 250",
        ],
        transport=[*DCTCP, "fast_retransmit = false"],
    ),
    "canary": dict(
        what="Canary: DCTCP hosts ranking by remaining bytes with an ordering "
        "shim, AIFO-style admission (k = 0.9, window 20, 1 sample in 20), early "
        "deflection to the emptier admitting one of two random switch-facing "
        "ports, power-of-two forwarding",
        network=[
            'load_balancing = "power_of_two"',
            'switch_queue = { kind = "aifo", window = 20, sample = 20, k = 0.9, k_packets = 15 }',
            "switch_buffer_bytes = 225000",
            'refusal = "deflect_two_admitting"',
            "hop_limit = 250",
        ],
        transport=[*DCTCP, 'rank = "remaining_bytes"', 'reorder_window = "100us"'],
    ),
}

SCENARIOS = {
    "baseline": ("no failure", ""),
    "linkdown": (
        "link leaf0-spine0 down at 10 ms, up at 30 ms",
        f"""
[[event]]
at = "10ms"
action = "down"
link = {LINK}

[[event]]
at = "30ms"
action = "up"
link = {LINK}
""",
    ),
    "gray": (
        "link leaf0-spine0 loses 1 % of its packets (both ways) from 10 ms to 30 ms",
        f"""
[[event]]
at = "10ms"
action = "loss"
loss = 0.01
stream = "gray"
link = {LINK}

[[event]]
at = "30ms"
action = "loss"
loss = 0.0
stream = "gray"
link = {LINK}
""",
    ),
}


def config(design: str, scenario: str, detection: str = DETECTION) -> str:
    d = DESIGNS[design]
    what, events = SCENARIOS[scenario]
    tag = "" if detection == DETECTION else f"_{detection}"
    network = ['forwarding = "cut_through"', *d["network"]]
    if events:
        network.append(f'failure_detection = "{detection}"')
    net_text = "\n".join(network)
    tr_text = "\n".join(d["transport"])
    return f"""# Failures on the pHost paper's leaf-spine (issue 32): {d["what"]}.
# Scenario {scenario}: {what}.
# 144 hosts = 9 leaves x 16, 4 spines, 10 Gbit/s hosts, 40 Gbit/s fabric,
# 0.2 us per link, cut-through; web search flow sizes, Poisson all-to-all
# arrivals at load 0.6 for about {ARRIVALS_S * 1e3:.0f} ms ({FLOWS} flows).
# Generated by make_configs.py; run them all with ./run.sh (see README.md).
name = "failures-{design}{tag.replace("_", "-")}-{scenario}"
seed = 1

{TOPOLOGY}
[network]
{net_text}

[transport]
{tr_text}

[run]
time_limit = "{TIME_LIMIT}"

[output.links]
interval = "1ms"

[[workload]]
kind = "poisson"
cdf = "websearch"
load = {LOAD}
flows = {FLOWS}
{events}"""


# Variants run only where they differ: pHost's RTS timer never fires
# without losses.
ONLY_FAILURES = {"phost_rts"}


def main() -> None:
    for design in DESIGNS:
        for scenario in SCENARIOS:
            if design in ONLY_FAILURES and scenario == "baseline":
                continue
            (HERE / f"{design}_{scenario}.toml").write_text(
                config(design, scenario), encoding="utf-8"
            )
    (HERE / "ecmp_never_linkdown.toml").write_text(
        config("ecmp", "linkdown", "never"), encoding="utf-8"
    )


if __name__ == "__main__":
    main()
