"""Write the FlashPass experiment configs (ICNP 2021, spec
shared/specs/flashpass-paper.md §3): the static dumbbell of Fig. 9/10 and
the dynamic 3-DC WAN of Fig. 13 at loads 0.4 and 0.8. Run from this folder:
``python3 make_configs.py``. Access delays and start times are drawn from a
fixed seed so that the files are reproducible.

``python3 make_configs.py --draw K --out DIR`` writes only the static
files, with the K-th other draw of delays and start times (K = 0 is the
committed one), into DIR: the same experiment on other random draws, for
the spread across seeds quoted in README.md."""

import argparse
import random
from pathlib import Path

PROTOCOLS = {
    "cubic": '[transport]\nprotocol = "cubic"\ninitial_rto = "200ms"\nmin_rto = "200ms"\n',
    # Linux's fq pacing (issue 35): the paper's Cubic is a Linux-style one.
    "cubic_paced": '[transport]\nprotocol = "cubic"\ninitial_rto = "200ms"\nmin_rto = "200ms"\n'
    'pacing = "fq"\n',
    "expresspass": '[transport]\nprotocol = "expresspass"\n',
    "expresspass_star": '[transport]\nprotocol = "expresspass"\naeolus = true\n',
    "flashpass": '[transport]\nprotocol = "flashpass"\n',
    "flashpass_star": '[transport]\nprotocol = "flashpass"\naeolus = true\n',
}


def network(proto, switch_buffer):
    credit = not proto.startswith("cubic")
    q = '{ kind = "credit_port" }' if credit else '{ kind = "drop_tail" }'
    s = (
        "[network]\nmss = 1460\nheader_bytes = 78\n"
        f"switch_queue = {q}\nswitch_buffer_bytes = {switch_buffer}\n"
        'load_balancing = "symmetric_ecmp"\n'
    )
    if credit:
        s += f"host_queue = {q}\n"
    return s


def static(n, delays, label, size_note, out=Path("."), draw=0):
    rng = random.Random(2021 + n + 1000 * draw)
    if delays == "uniform":
        access = [f"{rng.uniform(0, 20):.3f}ms" for _ in range(n)]
    else:
        access = ["10ms"] * n
    starts = [rng.uniform(0, 0.2) for _ in range(n)]
    hosts = ", ".join(f'"s{i}"' for i in range(n)) + ', "r"'
    links = [
        f'  {{ a = "s{i}", b = "sw", rate = "10Gbps", delay = "{d}" }}'
        for i, d in enumerate(access)
    ]
    links.append('  { a = "sw", b = "r", rate = "10Gbps", delay = "10ms" }')
    with open(out / f"static_{label}_flows.csv", "w") as f:
        f.write("src,dst,size_bytes,start_ns\n")
        for i, t in enumerate(starts):
            f.write(f"{i},{n},10000000000,{round(t * 1e9)}\n")
    for proto in ("cubic", "cubic_paced", "expresspass", "flashpass"):
        # The paced variant says so; the other files keep their text.
        paced = "# Cubic with Linux's fq pacing (issue 35; see README.md).\n"
        with open(out / f"static_{label}_{proto}.toml", "w") as f:
            f.write(
                f"# FlashPass Fig. 10 ({size_note}): {n} long flows into one receiver;\n"
                "# 10 Gbit/s links, a 10 ms bottleneck, 200 KB per port (20 KB per Gbit/s),\n"
                "# access delays "
                f"{'U(0, 20 ms)' if delays == 'uniform' else '10 ms'}, starts U(0, 0.2 s).\n"
                "# 5 s, as the paper.\n"
                + (paced if proto == "cubic_paced" else "")
                + f'name = "flashpass-static-{label}-{proto.replace("_", "-")}"\n\n'
                '[topology]\nkind = "explicit"\n'
                f"hosts = [{hosts}]\nswitches = [\"sw\"]\nlinks = [\n"
                + ",\n".join(links)
                + "\n]\n\n"
                + network(proto, 200_000)
                + "\n" + PROTOCOLS[proto]
                + f'\n[[workload]]\nkind = "csv"\nfile = "static_{label}_flows.csv"\n'
                + '\n[run]\ntime_limit = "5s"\n'
            )


def dynamic(load, proto, extra="", suffix=""):
    dcs = 3
    per_dc = 20
    hosts = [f"dc{d}h{i}" for d in range(1, dcs + 1) for i in range(per_dc)]
    links = [f'  {{ a = "{h}", b = "dc{h[2]}", rate = "1Gbps", delay = "10us" }}' for h in hosts]
    for a, b, d in [(1, 2, "40ms"), (1, 3, "30ms"), (2, 3, "20ms")]:
        links.append(
            f'  {{ a = "dc{a}", b = "dc{b}", rate = "10Gbps", delay = "{d}",'
            " buffer_bytes = 200000 }"
        )
    name = f"dynamic_load{load}_{proto}{suffix}"
    with open(f"{name}.toml", "w") as f:
        f.write(
            f"# FlashPass Figs. 11/12: the 3-DC WAN of Fig. 13 at load {load}.\n"
            "# 20 hosts per DC on 1 Gbit/s, WAN links 10 Gbit/s with one-way 40/30/20 ms,\n"
            "# 20 KB per port per Gbit/s, RTO 200 ms; Alibaba WAN flow sizes (mean 65 MB),\n"
            "# Poisson arrivals, every flow between two DCs. `flows` is the run size\n"
            "# (the paper does not give its own); flows still running at the time limit\n"
            "# count as unfinished.\n"
            f'name = "flashpass-{name.replace("_", "-")}"\n\n'
            '[topology]\nkind = "explicit"\n'
            "hosts = [" + ", ".join(f'"{h}"' for h in hosts) + "]\n"
            'switches = ["dc1", "dc2", "dc3"]\nlinks = [\n' + ",\n".join(links) + "\n]\n\n"
            + network(proto.replace("_star", ""), 20_000)
            + "\n" + PROTOCOLS[proto] + extra
            + '\n[[workload]]\nkind = "poisson"\ncdf = "../../workloads/ali_wan.cdf"\n'
            f"load = {load}\n"
            f"flows = 200\ngroup_size = {per_dc}\n"
            + '\n[output]\nsize_buckets = [10000000]\n'
            + '\n[run]\ntime_limit = "60s"\n'
        )


def main():
    """Write the committed files, or (``--draw K``) another draw of the static ones."""
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--draw", type=int, default=0, help="draw of delays and starts (0: committed)")
    ap.add_argument("--out", type=Path, default=Path("."), help="folder to write into")
    args = ap.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    static(20, "uniform", "n20", "case a", args.out, args.draw)
    static(200, "uniform", "n200", "case b", args.out, args.draw)
    static(20, "equal", "n20_equal", "case c", args.out, args.draw)
    if args.draw != 0 or args.out != Path("."):
        return
    # Pacing is a static-case question (issue 35): the dynamic runs keep plain Cubic.
    for load in (0.4, 0.8):
        for proto in PROTOCOLS:
            if proto != "cubic_paced":
                dynamic(load, proto)
    dynamic(0.8, "flashpass", "over_provisioning = false\n", "_no_overprovisioning")


if __name__ == "__main__":
    main()
