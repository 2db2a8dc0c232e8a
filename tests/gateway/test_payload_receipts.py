"""A body the agent wrote leaves the request once folded: its receipt stands in the
call's argument, and names the ref that `recall` returns it by."""

from __future__ import annotations

import hashlib
import json

from tests.gateway.factories import call, file_text, make_context, prepare, read_input, shell_input

BODY = "".join(f"def handler_{n}(request):\n    return respond(request, code={n})\n\n" for n in range(120))


def test_a_written_body_leaves_the_request_as_a_payload_receipt():
    ctx = make_context(window=20_000, output_budget=2_000)
    prepare(ctx)
    ctx.add_assistant("Writing the handlers.", (call("w1", "write_file", path="src/handlers.py", content=BODY),))
    ctx.add_tool_result(shell_input("w1", "write_file src/handlers.py", "wrote src/handlers.py"))
    folded = None
    for n in range(40):
        boundary = prepare(ctx)
        if boundary.fold is not None and boundary.fold.payloads:
            folded = boundary
            break
        text = file_text(f"src/m{n}.py", 1, 60)
        ctx.add_assistant(f"Reading src/m{n}.py.", (call(f"r{n}", path=f"src/m{n}.py"),))
        ctx.add_tool_result(read_input(f"r{n}", f"src/m{n}.py", text))
    assert folded is not None, "no fold took the body out"

    sent = folded.request.messages
    assert all(BODY not in json.dumps([m.text, [c.arguments for c in m.tool_calls]]) for m in sent)
    writer = next(m for m in sent if any(c.id == "w1" for c in m.tool_calls))
    (write,) = writer.tool_calls
    receipt = write.arguments["content"]
    ref = hashlib.sha256(BODY.encode()).hexdigest()[:12]
    assert receipt.startswith(f"[payload {ref}: ") and "src/handlers.py" in receipt
    assert f'recall("{ref}")' in receipt
    assert write.arguments["path"] == "src/handlers.py"  # the call stays a valid call
    (payload,) = [p for p in ctx.payloads if p.ref == ref]
    assert payload.spec.text == BODY


def test_what_the_agent_posts_to_people_is_never_a_payload():
    question = "@maria Before I change the retry policy: " + "which of the two behaviours do you want? " * 20
    ctx = make_context(window=20_000, output_budget=2_000)
    ctx.prepare()
    ctx.add_assistant("Asking.", (call("q", "post_message", text=question),
                                  call("w", "write_file", path="src/retry.py", content=BODY)))
    assert [p.spec.path for p in ctx.payloads] == ["src/retry.py"]
