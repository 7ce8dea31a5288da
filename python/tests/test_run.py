"""pktsim.run: path, TOML text and dict give the same flows; bad input
raises ConfigError naming the field; the GIL is released during a run."""

from __future__ import annotations

import copy
import pickle
import subprocess
import sys
import threading
import time
from pathlib import Path

import polars as pl
import pytest

import pktsim


def test_path_string_and_dict_give_the_same_flows(
    tmp_path: Path, small_file: Path, small_text: str, small_dict: dict
) -> None:
    a = pktsim.run(small_file, tmp_path / "a")
    b = pktsim.run(small_text, tmp_path / "b")
    c = pktsim.run(small_dict, tmp_path / "c")
    assert isinstance(a.flows, pl.DataFrame)
    assert a.flows.height == 150
    assert a.flows.equals(b.flows) and a.flows.equals(c.flows)
    assert a.summary["flows"] == 150 and a.summary["protocol"] == "dctcp"
    assert a.path == tmp_path / "a" and (a.path / "config.toml").is_file()
    assert a.queues is not None and a.queues.height > 0
    # Same bytes, not just equal tables: determinism end to end.
    assert (a.path / "flows.parquet").read_bytes() == (c.path / "flows.parquet").read_bytes()


def test_seed_override_changes_the_flows(tmp_path: Path, small_dict: dict) -> None:
    a = pktsim.run(small_dict, tmp_path / "a")
    b = pktsim.run(small_dict, tmp_path / "b", seed=2)
    assert b.summary["seed"] == 2
    assert not a.flows.equals(b.flows)


def test_threads_give_the_same_bytes(tmp_path: Path, small_dict: dict) -> None:
    one = pktsim.run(small_dict, tmp_path / "one")
    two = pktsim.run(small_dict, tmp_path / "two", threads=2)
    assert (one.path / "flows.parquet").read_bytes() == (two.path / "flows.parquet").read_bytes()
    assert one.summary["events"] == two.summary["events"]
    with pytest.raises(pktsim.ConfigError) as e:
        pktsim.run(small_dict, tmp_path / "zero", threads=0)
    assert e.value.field == "run.threads"


def test_a_run_that_cannot_split_warns(tmp_path: Path, small_dict: dict) -> None:
    # No link of 100 ns or more to cut: the run keeps to one thread and
    # says so, as ``pktsim run`` does.
    cfg = copy.deepcopy(small_dict)
    cfg["topology"]["link_delay"] = "50ns"
    with pytest.warns(RuntimeWarning, match=r"run\.threads: .*one thread"):
        pktsim.run(cfg, tmp_path / "two", threads=2)
    # validate says the same, as ``pktsim validate`` does.
    cfg["run"] = {"threads": 2}
    with pytest.warns(RuntimeWarning, match=r"run\.threads: .*one thread"):
        pktsim.validate(cfg)


def test_link_series_are_a_table_per_port_and_interval(tmp_path: Path, small_dict: dict) -> None:
    cfg = copy.deepcopy(small_dict)
    cfg.setdefault("output", {})["links"] = {"interval": "100us"}
    res = pktsim.run(cfg, tmp_path / "links")
    links = res.links
    assert links is not None and links.height > 0
    for col in ("time_ps", "interval_ps", "port", "bytes", "utilisation", "drops_buffer_full"):
        assert col in links.columns
    assert links["utilisation"].max() <= 1.0
    # The last interval ends with the run; the rows add up to the ECN marks.
    assert links["time_ps"].max() == round(res.summary["sim_time_us"] * 1e6)
    assert links["ecn_marked"].sum() == res.summary["ecn_marked"]
    assert links["packets"].sum() <= res.summary["packet_hops"]
    # Off by default: no links.parquet.
    assert pktsim.run(small_dict, tmp_path / "none").links is None


def test_packet_trace_is_a_table_of_hop_events(tmp_path: Path, small_dict: dict) -> None:
    cfg = copy.deepcopy(small_dict)
    cfg.setdefault("output", {})["trace"] = {"flows": [0, 1]}
    res = pktsim.run(cfg, tmp_path / "trace")
    p = res.packets
    assert p is not None and p.height > 0
    assert set(p["flow"].unique().to_list()) <= {0, 1}
    assert p["time_ps"].is_sorted()
    sends = p.filter(pl.col("event") == "send").height
    delivered = p.filter(pl.col("event") == "deliver").height
    dropped = p.filter(pl.col("event") == "drop").height
    # Every traced packet sent was delivered, dropped or is still in flight.
    assert delivered > 0 and sends >= delivered + dropped
    assert res.summary["trace"] == {"rows": p.height, "truncated": False}
    assert pktsim.run(small_dict, tmp_path / "none").packets is None


def test_pcap_writes_a_capture_of_the_trace(tmp_path: Path, small_dict: dict) -> None:
    cfg = copy.deepcopy(small_dict)
    cfg.setdefault("output", {})["trace"] = {"flows": [0]}
    res = pktsim.run(cfg, tmp_path / "trace")
    src = res.flows["src"][0]
    path = pktsim.pcap(res.path, host=src)
    data = path.read_bytes()
    assert path == res.path / "packets.pcapng"
    # A pcapng section header, then the interface and the packets.
    assert data[:4] == bytes([0x0A, 0x0D, 0x0D, 0x0A]) and len(data) > 200
    p = res.packets
    assert p is not None
    at_src = (pl.col("node") == src) & (pl.col("src") == src)
    sent = p.filter((pl.col("event") == "dequeue") & at_src)
    got = p.filter((pl.col("event") == "deliver") & (pl.col("node") == src))
    # One enhanced packet block (type 6) per packet host 0 sent or got.
    blocks, i = 0, 0
    while i < len(data):
        kind = int.from_bytes(data[i : i + 4], "little")
        blocks += kind == 6
        i += int.from_bytes(data[i + 4 : i + 8], "little")
    assert blocks == sent.height + got.height > 0
    switch = sent["peer"][0]
    link = pktsim.pcap(res.path, link=(src, switch), out=tmp_path / "l.pcapng")
    assert link.is_file() and link.stat().st_size > 200
    with pytest.raises(pktsim.ConfigError, match="output.trace"):
        pktsim.pcap(pktsim.run(small_dict, tmp_path / "none").path)


def test_timeseries_follow_the_flows_chosen(tmp_path: Path, small_dict: dict) -> None:
    cfg = copy.deepcopy(small_dict)
    cfg.setdefault("output", {})["timeseries"] = {"flows": [0, 3], "interval": "20us"}
    res = pktsim.run(cfg, tmp_path / "ts")
    t = res.timeseries
    assert t is not None and t.height > 0
    assert set(t["flow"].unique().to_list()) <= {0, 3}
    names = set(t["variable"].cast(pl.Utf8).to_list())
    assert {"cwnd_bytes", "dctcp_alpha", "bytes_acked"} <= names
    assert t["time_ps"].is_sorted()
    assert pktsim.run(small_dict, tmp_path / "none").timeseries is None


def test_bad_value_names_the_field(tmp_path: Path, small_dict: dict) -> None:
    bad = copy.deepcopy(small_dict)
    bad["workload"][0]["load"] = 1.2
    with pytest.raises(pktsim.ConfigError) as e:
        pktsim.run(bad, tmp_path / "x")
    assert e.value.field == "workload[0].load"
    assert "workload[0].load" in str(e.value) and "1.2" in str(e.value)
    assert not (tmp_path / "x").exists()
    # It keeps its field on the way back from a worker process.
    back = pickle.loads(pickle.dumps(e.value))
    assert (back.field, str(back)) == (e.value.field, str(e.value))


def test_unknown_field_names_field_file_and_line(tmp_path: Path, small_text: str) -> None:
    p = tmp_path / "typo.toml"
    p.write_text(small_text.replace("spines = 2", "spline = 2"))
    with pytest.raises(pktsim.ConfigError) as e:
        pktsim.run(p, tmp_path / "x")
    err = e.value
    assert err.field == "topology.spline"
    assert err.file == str(p)
    assert err.line == small_text.splitlines().index("spines = 2") + 1
    with pytest.raises(pktsim.ConfigError) as e2:
        pktsim.validate(small_text.replace('load = 0.5', 'load = "half"'))
    # A workload is a tagged table: serde names the table, not the key.
    assert e2.value.field.startswith("workload[0]") and e2.value.file == "<string>"


def test_gil_is_released_while_running(tmp_path: Path, small_dict: dict) -> None:
    cfg = copy.deepcopy(small_dict)
    cfg["workload"][0]["flows"] = 3000
    t = threading.Thread(target=pktsim.run, args=(cfg, tmp_path / "big"))
    ticks = 0
    t.start()
    time.sleep(0.05)
    while t.is_alive():
        ticks += 1
        time.sleep(0.002)
    t.join()
    # With the GIL held for the whole run this thread could not tick at all.
    assert ticks >= 20, ticks


def test_command_line_offers_rust_and_python_commands(
    tmp_path: Path, small_file: Path
) -> None:
    cmd = [sys.executable, "-m", "pktsim"]
    ok = subprocess.run([*cmd, "validate", str(small_file)], capture_output=True, text=True)
    assert ok.returncode == 0 and ok.stdout.startswith("ok: 16 hosts"), ok
    bad = tmp_path / "bad.toml"
    bad.write_text(small_file.read_text().replace("load = 0.5", "load = 1.5"))
    r = subprocess.run([*cmd, "run", str(bad), "--quiet"], capture_output=True, text=True)
    assert r.returncode == 2 and "workload[0].load" in r.stderr, r
    h = subprocess.run([*cmd, "--help"], capture_output=True, text=True)
    assert "validate" in h.stdout and "reproduce" in h.stdout
