"""Atrium's own recorded sessions: the neutral trajectory form as JSON.

The runtime exports a session in this format and the replay evaluator reads it like any
other trajectory; converting another format's trajectory with `Trajectory.to_json` gives
the same format, so any run can be stored, trimmed or hand-crafted as a test case.
Files are named ``*.atrium.json``; one JSON object per file::

    {
      "format": "atrium-trajectory",          # required, exactly this
      "version": 1,                           # required; other versions are refused
      "source": "atrium",                     # the format it was first recorded in
      "trajectory_id": "room-3/session-12",
      "model": "anthropic:claude-sonnet-4",
      "system_prompt": "...",
      "task": "...",                          # the person's request as the agent got it
      "meta": {"repo_root": "/srv/repo", ...},  # free-form JSON, optional
      "steps": [                              # one per model call, in order
        {
          "index": 0,
          "assistant_text": "...",            # the answer's text, as kept in the history
          "reported_input_tokens": 5120,      # provider's numbers or null
          "reported_output_tokens": 230,
          "cached_input_tokens": 4096,        # part of reported_input_tokens
          "notice": null,                     # non-tool environment message after it
          "kept_in_history": true,            # false: dropped from later requests
          "events": [                         # the tool calls of this answer
            {
              "call_id": "toolu_01",
              "tool": "read_file",
              "arguments": {"path": "src/app.py", "start": 1, "end": 40},
              "output": "...",                # the result text exactly as the model saw it
              "exit_code": null,
              "call_in_text": false,          # true: the call is written in assistant_text
              "accesses": [                   # what the call touched
                {"kind": "read",              # read | write | edit | list | search
                 "path": "src/app.py",        # relative to the repository root
                 "start": 1, "end": 40,       # 1-based inclusive; null = whole / to end;
                                              # negative start = last N lines
                 "content_hash": "<sha256 of output>"}   # reads only, else null
              ]
            }
          ]
        }
      ]
    }

Optional fields (``meta``, token counts, ``notice``, ``kept_in_history``, ``exit_code``,
``call_in_text``, ``accesses``, ``start``/``end``/``content_hash``) may be omitted and
take the defaults shown by `Trajectory`; everything else is required and type-checked.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

from observations.replay.trajectory import JSON_FORMAT, Trajectory

SOURCE = "atrium"
SUFFIX = ".atrium.json"


def read_atrium(data: Any, *, path: str) -> Trajectory:
    return Trajectory.from_json(data, path=path)


def is_atrium(data: Any) -> bool:
    return isinstance(data, dict) and data.get("format") == JSON_FORMAT


def write_atrium(trajectory: Trajectory, path: str | os.PathLike[str]) -> Path:
    """Write ``trajectory`` as one ``*.atrium.json`` file, atomically (temp file + rename).

    ASCII-escaped JSON: recorded outputs may hold lone surrogates that UTF-8 cannot encode.
    """
    target = Path(path)
    temporary = target.with_name(target.name + ".tmp")
    temporary.write_text(json.dumps(trajectory.to_json(), indent=1) + "\n", encoding="utf-8")
    os.replace(temporary, target)
    return target
