"""The Canary artifact converter (reference/canary_artifact/to_db.py), without OMNeT++."""

import sqlite3

import pytest
from canary_artifact import to_db
from canary_artifact.to_db import ConvertError, Flow, Setup

# 4 hosts, 2 servers per query, 100 B replies, 10 B requests.
SETUP = Setup(hosts=4, requests_per_query=2, reply_bytes=100, request_bytes=10)

# Two background flows into host 1 (from 0 and 3), one query of client 2
# (servers 0 and 3), the query's flows listed out of order.
FLOWS = [
    Flow(7, 0, 1, 5000, 2_000_000, "background"),
    Flow(9, 3, 1, 700, 5_500_000, "background"),
    Flow(11, 3, 2, 100, 1_020_000, "query", 4),  # reply from 3
    Flow(10, 2, 3, 10, 1_000_000, "query", 4),  # request to 3
    Flow(8, 2, 0, 10, 1_000_000, "query", 4),  # request to 0
    Flow(12, 0, 2, 100, 1_020_000, "query", 4),  # reply from 0
]

BG = "cache_background_{}_db_1.000000_flowmult_11.850000_intermult_0.db"
Q = (
    "web_bursty_{}_db_1.000000_flowmult_1.000000_intermult_"
    "2_flows_per_incast_100_incast_flow_size_0.db"
)


def test_file_names_are_the_artifacts():
    names = to_db.file_names(Setup(hosts=320))
    assert names[("background", "inter_arrival_time")] == (
        "cache_background_inter_arrival_time_db_1.000000_flowmult_11.850000_intermult_0.db"
    )
    assert names[("bursty", "server_idx")] == (
        "web_bursty_server_idx_db_1.000000_flowmult_1.000000_intermult_"
        "40_flows_per_incast_20000_incast_flow_size_0.db"
    )
    assert to_db.cpp_to_string(0.11) == "0.110000"


def test_three_flows_exact_columns():
    t = to_db.build_tables(FLOWS, SETUP).files
    assert set(t) == {BG.format(k) for k in to_db.KINDS} | {Q.format(k) for k in to_db.QUERY_KINDS}
    table, cols = t[BG.format("inter_arrival_time")]
    assert table == "inter_arrival"
    assert list(cols) == ["server0app1", "server1app1", "server2app1", "server3app1"]
    # gaps: first from 0, then between starts, then the sentinel
    assert cols["server1app1"] == ["2e-06", "3.5e-06", "1000000.0"]
    assert cols["server0app1"] == ["1000000.0"]
    assert t[BG.format("flow_size")][1]["server1app1"] == ["5000", "700"]
    assert t[BG.format("server_idx")][1]["server1app1"] == ["0", "3"]
    assert t[BG.format("flow_ids")][1]["server1app1"] == ["7", "9"]
    # query app of client 2: absolute start once per request, servers in request order
    assert t[Q.format("inter_arrival_time")][1]["server2app2"] == ["1e-06", "1e-06"]
    assert t[Q.format("server_idx")][1]["server2app2"] == ["0", "3"]
    assert t[Q.format("flow_ids")][1]["server2app2"] == ["12", "11"]  # reply ids
    assert t[Q.format("query_ids")] == (
        "query_ids",
        {f"server{h}app2": (["4"] if h == 2 else []) for h in range(4)},
    )
    assert t[Q.format("flow_size")][1]["server2app2"] == ["100", "100"]


def test_round_trip_through_sqlite(tmp_path):
    paths = to_db.write_dbs(to_db.build_tables(FLOWS, SETUP), tmp_path / "distributions")
    assert len(paths) == 9
    p = tmp_path / "distributions" / BG.format("inter_arrival_time")
    assert to_db.read_column(p, "inter_arrival", "server1app1") == ["2e-06", "3.5e-06", "1000000.0"]
    assert to_db.read_column(p, "inter_arrival", "server0app1") == ["1000000.0"]
    # shorter columns are padded with "" (never NULL: the artifact strcmp()s every value)
    con = sqlite3.connect(p)
    rows = con.execute("SELECT server0app1, server1app1 FROM inter_arrival").fetchall()
    con.close()
    assert rows == [("1000000.0", "2e-06"), ("", "3.5e-06"), ("", "1000000.0")]
    # a query app with no queries still has its (empty) column
    q = tmp_path / "distributions" / Q.format("server_idx")
    assert to_db.read_column(q, "server_idx", "server0app2") == []
    assert to_db.read_column(q, "server_idx", "server2app2") == ["0", "3"]
    # values read back as the C++ reads them (std::stod) give the same times
    ia = to_db.read_column(
        tmp_path / "distributions" / Q.format("inter_arrival_time"), "inter_arrival", "server2app2"
    )
    assert [round(float(v) * 1e12) for v in ia] == [1_000_000, 1_000_000]


def test_bad_inputs_give_clear_errors():
    with pytest.raises(ConvertError, match="expected 2 requests"):
        to_db.build_tables(FLOWS[:-1], SETUP)
    with pytest.raises(ConvertError, match="replyLength is 100 B"):
        bad = [f if f.flow_id != 11 else Flow(11, 3, 2, 99, 1_020_000, "query", 4) for f in FLOWS]
        to_db.build_tables(bad, SETUP)
    with pytest.raises(ConvertError, match="host 9 outside 0..3"):
        to_db.build_tables([Flow(1, 9, 1, 10, 0, "background")], SETUP)
    with pytest.raises(ConvertError, match="neither 'background' nor 'query'"):
        to_db.build_tables([Flow(1, 0, 1, 10, 0, "elephant")], SETUP)
    with pytest.raises(ConvertError, match="appears twice"):
        to_db.build_tables([FLOWS[0], FLOWS[0]], SETUP)


def test_setup_and_ini_from_config(tmp_path):
    cfg = {
        "topology": {"kind": "leaf_spine", "leaves": 8, "hosts_per_leaf": 40},
        "workload": [
            {"kind": "poisson"},
            {"kind": "queries", "servers": 40, "reply_bytes": 20000, "request_bytes": 250},
        ],
    }
    s = to_db.setup_from_config(cfg)
    assert (s.hosts, s.requests_per_query, s.reply_bytes) == (320, 40, 20000)
    ini = to_db.ini_overrides(
        base_ini=tmp_path / "omnetpp_1G.ini",
        base_config="DCTCP_ECMP",
        dist_root=tmp_path,
        sim_time_s=0.05,
        out_prefix=tmp_path / "r",
        setup=s,
    )
    assert f"include {tmp_path}/omnetpp_1G.ini" in ini
    assert "extends = DCTCP_ECMP" in ini and "sim-time-limit = 0.05s" in ini
    assert f'distibutions_base_root = "{tmp_path}/"' in ini
    with pytest.raises(ConvertError, match="leaf-spine"):
        to_db.setup_from_config({"topology": {"kind": "fat_tree"}})
