"""What a gateway request costs the hub in the database once its conversation is under
way (issue 26: at most 12 statements in one transaction; and no savepoint in it, each
two round trips more), counted in process against the local wire-protocol server. The
time it takes is the bench's (tests/bench/test_gateway_step_cost.py); the count does
not vary from run to run."""

from __future__ import annotations

import json

from django.db import connection
from django.test.utils import CaptureQueriesContext

from endpoint.formats import FORMATS
from endpoint.models import GatewayKey
from endpoint.sessions import proxied_turn
from tests.endpoint.conftest import owner, setup, wire  # noqa: F401
from tests.endpoint.test_sessions import FILE, TOOLS, completion

CONTROL = ("SAVEPOINT", "RELEASE SAVEPOINT", "BEGIN", "COMMIT")  # SQLite's is BEGIN IMMEDIATE


def test_a_request_under_way_is_at_most_12_statements_in_one_transaction_without_savepoints(setup, wire):  # noqa: F811
    key = GatewayKey.objects.get(agent__name="gpt")
    messages = [{"role": "system", "content": "You fix bugs."}, {"role": "user", "content": "Fix geo.py"}]
    counted = []
    for n in range(12):
        wire.reply("/v1/chat/completions",
                   json_body=completion(text=f"Step {n}.", call=("read_file", {"path": f"src/m{n}.py"}), n=n))
        request = FORMATS["openai"].request({"model": "m", "messages": messages, "tools": TOOLS}, "gpt-4.1")
        with CaptureQueriesContext(connection) as queries:
            turn = proxied_turn(key=key, conversation="h:counted", request=request)
        sql = [q["sql"] for q in queries.captured_queries]
        counted.append((len([s for s in sql if not s.startswith(CONTROL)]), sum(s.startswith("BEGIN") for s in sql),
                        sum(s.startswith("SAVEPOINT") for s in sql)))
        call = turn.tool_calls[0]
        messages += [{"role": "assistant", "content": turn.text, "tool_calls": [
            {"id": call.id, "type": "function", "function": {"name": call.name, "arguments": json.dumps(call.arguments)}}]},
            {"role": "tool", "tool_call_id": call.id, "content": f"{FILE}# {n}\n"}]
    assert all(statements <= 12 and transactions == 1 and savepoints == 0
               for statements, transactions, savepoints in counted[2:]), counted
