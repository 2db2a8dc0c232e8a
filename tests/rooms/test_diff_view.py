"""A file's diff as numbered, highlighted lines, everything escaped."""

from __future__ import annotations

from rooms.diff_view import diff_lines

PATCH = """diff --git a/app.py b/app.py
index 1111111..2222222 100644
--- a/app.py
+++ b/app.py
@@ -10,3 +10,4 @@ def handler():
 x = 1
-y = "<script>alert(1)</script>"
+y = '&lt;'
+z = 3
 w = 4
\\ No newline at end of file
"""


def test_lines_are_numbered_on_their_side_and_escaped():
    shown = diff_lines("app.py", PATCH, max_lines=100)
    kinds = [(line.kind, line.old, line.new) for line in shown.lines]
    assert kinds == [("hunk", None, None), ("ctx", 10, 10), ("del", 11, None), ("add", None, 11),
                     ("add", None, 12), ("ctx", 12, 13), ("note", None, None)]
    removed = shown.lines[2].html
    assert "<script>" not in removed and "&lt;script&gt;" in removed and 'class="s2"' in removed
    assert "&amp;lt;" in shown.lines[3].html
    assert shown.lines[0].html.startswith("@@ -10,3 +10,4 @@")


def test_an_unknown_language_is_plain_text_and_a_long_diff_is_cut():
    patch = "@@ -1,0 +1,5 @@\n" + "".join(f"+<b>{n}</b>\n" for n in range(5))
    shown = diff_lines("notes.unknown-ext", patch, max_lines=3)
    assert shown.cut == 3 and len(shown.lines) == 3
    assert shown.lines[1].html == "&lt;b&gt;0&lt;/b&gt;"


def test_nul_bytes_make_a_file_binary():
    assert diff_lines("x.bin", "@@ -1 +1 @@\n-a\x00\n+b\n", max_lines=10).binary
