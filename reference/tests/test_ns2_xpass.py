"""The pktsim -> ns2-xpass converter (reference/ns2_xpass/to_tcl.py), without ns-2."""

import re
import tomllib

import pytest
from ns2_xpass import to_tcl

CONFIG = """
name = "two"
[topology]
kind = "explicit"
hosts = ["a", "b", "r"]
switches = ["sw"]
links = [
  { a = "a", b = "sw", rate = "10Gbps", delay = "0.852ms" },
  { a = "b", b = "sw", rate = "10Gbps", delay = "17us" },
  { a = "sw", b = "r", rate = "10Gbps", delay = "10ms" },
]
[network]
mss = 1460
header_bytes = 78
switch_buffer_bytes = 200000
[transport]
protocol = "expresspass"
[[workload]]
kind = "csv"
file = "f.csv"
[run]
time_limit = "5s"
"""

FLOWS = "src,dst,size_bytes,start_ns\n0,2,10000000000,48340112\nb,r,1500,0.5\n"


def cfg(text=CONFIG):
    return tomllib.loads(text)


def script(**kw):
    c = cfg()
    flows = to_tcl.read_flows_csv(FLOWS, c["topology"]["hosts"])
    return to_tcl.convert(c, flows, **kw)


def test_flows_parse_by_index_and_name():
    flows = to_tcl.read_flows_csv(FLOWS, ["a", "b", "r"])
    assert flows == [
        to_tcl.Flow(0, 2, 10_000_000_000, 48_340_112_000),
        to_tcl.Flow(1, 2, 1500, 500),
    ]


def test_links_both_ways_with_rate_delay_and_queue():
    s = script()
    # nodes: hosts first, then switches
    assert "# nodes: 0=a 1=b 2=r 3=sw" in s
    for a, b, d in [(0, 3, "0.000852"), (3, 0, "0.000852"), (1, 3, "1.7e-05"), (3, 1, "1.7e-05"),
                    (3, 2, "0.01"), (2, 3, "0.01")]:
        assert f"$ns simplex-link $n({a}) $n({b}) 10000000000 {d} XPassDropTail" in s
    assert s.count("simplex-link") == 6


def test_switch_ports_get_the_buffer_hosts_are_unlimited():
    s = script()
    sw_r = "[[$ns link $n(3) $n(2)] queue] set data_limit_ 200000"
    a_sw = "[[$ns link $n(0) $n(3)] queue] set data_limit_ 2147483647"
    assert sw_r in s and a_sw in s
    assert s.count("set data_limit_ 200000") == 3  # sw -> a, b, r
    # 10 Gbit/s * 84 / (84 + 1538) bytes/s: ns-default.tcl's 64734895
    assert s.count("set token_refresh_rate_ 64734895") == 6


def test_flow_start_lines_and_agents():
    s = script()
    assert '$ns at 0.048340112 "$snd(0) advance-bytes 10000000000" ;# a -> r' in s
    assert '$ns at 5e-10 "$snd(1) advance-bytes 1500" ;# b -> r' in s
    assert "$ns attach-agent $n(0) $snd(0); $ns attach-agent $n(2) $rcv(0)" in s
    assert "$snd(1) set fid_ 1; $rcv(1) set fid_ 1" in s
    assert '$ns at 5 "finish"' in s
    # the per-flow monitor on the link into the receiver is read at T - 10 ms
    assert "$ns attach-fmon [$ns link $n(3) $n(2)] $fm(4)" in s
    assert '$ns at 4.99 "snap_flows 4 arrived"' in s


def test_ns2_defaults_are_written_and_overridable():
    s = script()
    for line in ["Agent/XPass set alpha_ 0.5", "Agent/XPass set w_init_ 0.5",
                 "Agent/XPass set min_jitter_ -0.1", "Agent/XPass set max_jitter_ 0.1",
                 "Queue/XPassDropTail set credit_limit_ 840",
                 "Queue/XPassDropTail set max_tokens_ 840",
                 "Agent/XPass set max_ethernet_size_ 1538",
                 "Agent/XPass set xpass_hdr_size_ 78"]:
        assert line in s, line
    p = to_tcl.apply_overrides(to_tcl.NS2_DEFAULTS, ["credit_limit_bytes=672", "alpha=0.0625"])
    s2 = script(params=p)
    assert "Queue/XPassDropTail set credit_limit_ 672" in s2
    assert "Agent/XPass set alpha_ 0.0625" in s2


def test_time_limit_override():
    assert '$ns at 0.5 "finish"' in script(time_limit=0.5)


def test_cubic_uses_linux_tcp_and_packet_queue_limits():
    s = script(protocol="cubic")
    assert "select_ca cubic" in s and "XPassDropTail" not in s
    assert "[[$ns link $n(3) $n(2)] queue] set limit_ 130" in s  # 200000 // 1538
    assert "Agent/TCP set window_ 4309" in s  # pktsim's 6 MiB receive window / 1460
    assert "Agent/TCP set tcpip_base_hdr_size_ 78" in s
    assert "set_ca_param" not in s
    s2 = script(protocol="cubic", params=to_tcl.XpassParams(cubic_beta=717))
    assert '$ns at 0 "$snd(1) set_ca_param cubic beta 717"' in s2


@pytest.mark.parametrize(
    ("edit", "message"),
    [
        (('kind = "explicit"', 'kind = "fat_tree"'), "topology.kind must be 'explicit'"),
        (('b = "sw", rate = "10Gbps", delay = "17us"', 'b = "sx", rate = "10Gbps", delay = "17us"'),
         "unknown node 'sx'"),
        (('delay = "10ms"', 'delay = "10 parsecs"'), "is not a number with a unit"),
        (('time_limit = "5s"', 'x = 1'), "run.time_limit is required"),
        (('protocol = "expresspass"', 'protocol = "dctcp"'), "only expresspass"),
    ],
)
def test_bad_config_gives_a_clear_error(edit, message):
    c = cfg(CONFIG.replace(*edit))
    flows = [to_tcl.Flow(0, 2, 100, 0)]
    with pytest.raises(to_tcl.ConvertError, match=re.escape(message)):
        to_tcl.convert(c, flows)


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("src,dst,size\n0,1,2\n", "header must be src,dst,size_bytes,start_ns"),
        ("src,dst,size_bytes,start_ns\n0,zed,5,0\n", "line 2: unknown host 'zed'"),
        ("src,dst,size_bytes,start_ns\n0,1,x,0\n", "line 2"),
    ],
)
def test_bad_flows_give_a_clear_error(text, message):
    with pytest.raises(to_tcl.ConvertError, match=re.escape(message)):
        to_tcl.read_flows_csv(text, ["a", "b", "r"])


def test_flow_to_itself_is_refused():
    with pytest.raises(to_tcl.ConvertError, match="same host"):
        to_tcl.convert(cfg(), [to_tcl.Flow(1, 1, 100, 0)])


def test_unknown_override_is_refused():
    with pytest.raises(to_tcl.ConvertError, match="KEY one of"):
        to_tcl.apply_overrides(to_tcl.NS2_DEFAULTS, ["beta=1"])


def test_snapshots_of_every_link_monitor():
    s = script(snapshots=(1.0,))
    assert '$ns at 1 "snap_links 1"' in s
    assert s.count('puts $sf "$t,') == 6  # one row per link direction
    with pytest.raises(to_tcl.ConvertError, match="not inside the run"):
        script(snapshots=(7.0,))
