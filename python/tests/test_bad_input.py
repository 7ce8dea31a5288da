"""Bad input from Python: a ConfigError naming the key path (never a line
of the internal TOML a dict is turned into), configs too large for the
resource limits refused before anything is allocated (the interpreter
survives), and an unusable ``out`` refused before the run."""

from __future__ import annotations

import copy
import math
import subprocess
import sys
import warnings
from pathlib import Path

import pytest

import pktsim
from conftest import SMALL


def test_type_error_in_a_dict_names_the_key_path_and_no_line(small_dict: dict) -> None:
    bad = copy.deepcopy(small_dict)
    bad["topology"]["spines"] = "two"
    with pytest.raises(pktsim.ConfigError) as e:
        pktsim.validate(bad)
    assert e.value.field == "topology.spines"
    assert e.value.line is None and e.value.file == "<dict>"
    assert str(e.value).startswith("<dict>: topology.spines: "), str(e.value)


def test_type_error_in_a_file_names_the_key_and_its_line(tmp_path: Path, small_text: str) -> None:
    p = tmp_path / "bad.toml"
    p.write_text(small_text.replace("spines = 2", 'spines = "two"'))
    with pytest.raises(pktsim.ConfigError) as e:
        pktsim.validate(p)
    assert e.value.field == "topology.spines"
    assert e.value.line == small_text.splitlines().index("spines = 2") + 1
    bad_load = small_text.replace("load = 0.5", 'load = "half"')
    with pytest.raises(pktsim.ConfigError) as e2:
        pktsim.validate(bad_load)
    assert e2.value.field == "workload[0].load"
    assert e2.value.line == bad_load.splitlines().index('load = "half"') + 1


@pytest.mark.parametrize("value", [math.nan, math.inf, -math.inf])
def test_non_finite_numbers_in_a_dict_name_the_field(small_dict: dict, value: float) -> None:
    bad = copy.deepcopy(small_dict)
    bad["workload"][0]["load"] = value
    with pytest.raises(pktsim.ConfigError) as e:
        pktsim.run(bad, "unused")
    assert e.value.field == "workload[0].load"
    assert "workload[0].load" in str(e.value)


def test_objects_in_a_dict_name_the_field(small_dict: dict) -> None:
    bad = copy.deepcopy(small_dict)
    bad["topology"]["host_rate"] = object()
    with pytest.raises(pktsim.ConfigError) as e:
        pktsim.validate(bad)
    assert e.value.field == "topology.host_rate"


# Each would abort the process (allocation failure) without the estimate.
# 200,000 leaves: routing keeps an entry per (switch, leaf), 480 GB here.
HUGE = [
    ("topology.leaves", 200_000, "topology"),
    ("workload.0.flows", 10**12, "workload[0].flows"),
    ("output.queue_sample_interval", "1ps", "output.queue_sample_interval"),
]


@pytest.mark.parametrize(("key", "value", "field"), HUGE)
def test_configs_too_large_raise_and_the_interpreter_survives(
    key: str, value: object, field: str
) -> None:
    script = f"""
import tomllib
import pktsim
from pktsim._config import set_path
cfg = tomllib.loads({SMALL!r})
set_path(cfg, {key!r}, {value!r})
try:
    pktsim.validate(cfg)
except pktsim.ConfigError as e:
    print("field=" + str(e.field))
    print("msg=" + str(e))
print("alive")
"""
    r = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                       timeout=120)
    assert r.returncode == 0, r.stderr
    assert "alive" in r.stdout and f"field={field}\n" in r.stdout, r.stdout + r.stderr


def test_memory_limit_can_be_raised_from_the_config(small_dict: dict) -> None:
    cfg = copy.deepcopy(small_dict)
    cfg["limits"] = {"max_memory": "1KB"}
    with pytest.raises(pktsim.ConfigError) as e:
        pktsim.validate(cfg)
    assert "max_memory" in str(e.value) and "1 KB" in str(e.value)
    cfg["limits"] = {"max_memory": "8GB"}
    pktsim.validate(cfg)


def test_out_that_is_a_file_is_refused_before_the_run(tmp_path: Path, small_dict: dict) -> None:
    f = tmp_path / "a-file"
    f.write_text("keep me")
    with pytest.raises(OSError, match="is a file"):
        pktsim.run(small_dict, f)
    assert f.read_text() == "keep me"


def test_a_rerun_leaves_no_stale_files(tmp_path: Path, small_dict: dict) -> None:
    out = tmp_path / "r"
    first = pktsim.run(small_dict, out)
    assert first.queues is not None
    no_samples = copy.deepcopy(small_dict)
    del no_samples["output"]
    pktsim.run(no_samples, out)
    assert not (out / "queues.parquet").exists()


def test_no_flow_finished_warns(tmp_path: Path, small_dict: dict) -> None:
    cfg = copy.deepcopy(small_dict)
    cfg["run"] = {"time_limit": "1ns"}
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        pktsim.run(cfg, tmp_path / "short")
    assert any("no flow finished" in str(x.message) for x in w), [str(x.message) for x in w]
