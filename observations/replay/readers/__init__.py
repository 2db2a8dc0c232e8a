"""One reader per recorded-trajectory format, each ``read_<format>(data, *, path)``
taking the parsed JSON and returning a `Trajectory` (or raising
`TrajectoryFormatError`). `observations.replay.load` picks the reader."""

from observations.replay.readers.atrium import read_atrium, write_atrium
from observations.replay.readers.mini_swe_agent import read_mini_swe_agent
from observations.replay.readers.openhands import read_openhands
from observations.replay.readers.swe_agent import read_swe_agent

__all__ = ["read_atrium", "read_mini_swe_agent", "read_openhands", "read_swe_agent", "write_atrium"]
