"""A synthetic ``timeseries.parquet`` (the schema of ``[output.timeseries]``:
``time_ps`` u64, ``flow`` u32, ``variable`` string, ``value`` f64) for the
report's tests, so that they need no particular transport's hook."""

from __future__ import annotations

from pathlib import Path

import polars as pl

#: ssthresh before the first loss: "infinite", as the TCP family starts.
INFINITE = float(2**63)


def write_timeseries(run_dir: Path, flows: int = 10, long_flow_points: int = 6000) -> Path:
    """Flows ``0..flows-1``: a cwnd that doubles per RTT then saws (halved
    at a loss every 40 RTTs), ssthresh infinite until the first loss,
    srtt, DCTCP alpha and an in-recovery flag; flow 0 has
    ``long_flow_points`` samples per variable (more than a page draws),
    the others 200. Returns the file's path."""
    rows: dict[str, list] = {"time_ps": [], "flow": [], "variable": [], "value": []}

    def add(t: int, f: int, var: str, v: float) -> None:
        rows["time_ps"].append(t)
        rows["flow"].append(f)
        rows["variable"].append(var)
        rows["value"].append(v)

    for f in range(flows):
        n = long_flow_points if f == 0 else 200
        rtt_ps = 5_000_000 if f == 0 else 10_000_000 + 1_000_000 * f
        cwnd, ssthresh = 14_600.0, INFINITE
        for k in range(n):
            t = 1_000_000 * f + k * rtt_ps
            recovering = k > 0 and k % 40 == 0
            if recovering:
                ssthresh = cwnd / 2
                cwnd = ssthresh
            elif cwnd < ssthresh:
                cwnd = min(cwnd * 2, 400_000.0)
            else:
                cwnd += 1460.0
            add(t, f, "cwnd_bytes", cwnd)
            add(t, f, "ssthresh_bytes", ssthresh)
            add(t, f, "srtt_us", rtt_ps / 1e6 + (k % 7))
            add(t, f, "dctcp_alpha", 1.0 / (1 + k))
            add(t, f, "in_recovery", 1.0 if recovering else 0.0)
    df = pl.DataFrame(rows, schema={"time_ps": pl.UInt64, "flow": pl.UInt32,
                                    "variable": pl.String, "value": pl.Float64})
    path = run_dir / "timeseries.parquet"
    df.sort("time_ps", "flow").write_parquet(path)
    return path
