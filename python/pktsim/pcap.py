"""``pktsim.pcap``: a run's packet trace as a pcapng file for Wireshark or
tshark, the Python side of ``pktsim pcap``."""

from __future__ import annotations

import os
from pathlib import Path

from . import _core


def pcap(
    run_dir: str | os.PathLike[str],
    *,
    host: str | int | None = None,
    link: tuple[str | int, str | int] | str | None = None,
    out: str | os.PathLike[str] | None = None,
) -> Path:
    """Write the capture of a run that had ``[output.trace]`` and return
    its path (default ``run_dir/packets.pcapng``).

    With ``host`` (an index or a name such as ``"h3"``): what that host
    sends and receives, at its NIC. With ``link`` (two nodes, e.g.
    ``("h0", "s1")`` or ``"0,16"``): the link between them, both ways.
    With neither: every packet once, as its sender puts it on the wire.
    TCP-family runs give TCP segments with the simulator's sequence and
    acknowledgement numbers, ECN bits and SACK blocks; other designs give
    UDP datagrams carrying pktsim's own header (layout in the README).

    A run without a trace, or a node that does not exist, raises
    :class:`pktsim.ConfigError` saying which.
    """
    d = Path(run_dir)
    dest = Path(out) if out is not None else d / "packets.pcapng"
    if isinstance(link, tuple):
        link = f"{link[0]},{link[1]}"
    _core.pcap(
        str(d),
        host=None if host is None else str(host),
        link=link,
        out=str(dest),
    )
    return dest
