"""What an agent's one-off Python script writes, read from its source: the paths it
spells out for writing, and nothing it only reads or computes."""

from __future__ import annotations

import textwrap
import time

import pytest

from observations.shell.python_writes import python_writes

# A script as the recorded mini-swe-agent runs write them (django__django-11848).
APPLY_FIX = """
import sys

file_path = 'django/utils/http.py'
with open(file_path, 'r') as f:
    lines = f.readlines()

new_lines = []
for line in lines:
    new_lines.append(line)

with open(file_path, 'w') as f:
    f.writelines(new_lines)
"""


def writes(source: str) -> tuple[str, ...]:
    return python_writes(textwrap.dedent(source))


def test_a_fix_script_names_the_file_it_rewrites_not_the_ones_it_reads():
    assert writes(APPLY_FIX) == ("django/utils/http.py",)
    assert writes("text = open('a.py').read()\nopen('b.py', 'w').write(text)\nopen('c.log', mode='a')") == (
        "b.py", "c.log")
    assert writes("open('a.py')\nopen('a.py', 'r')\nopen('a.py', 'rb')\nopen('a.py', mode='r')") == ()


@pytest.mark.parametrize(("source", "expected"), [
    ("from pathlib import Path\nPath('src/a.py').write_text('x')", ("src/a.py",)),
    ("import pathlib\np = pathlib.Path('src') / 'b.py'\np.write_bytes(b'x')", ("src/b.py",)),
    ("from pathlib import Path\nwith Path('c.txt').open('w') as f: pass", ("c.txt",)),
    ("import os\nroot = 'pkg'\nname = os.path.join(root, 'm.py')\nopen(name, 'x')", ("pkg/m.py",)),
    ("base = 'a'\npath = base\nopen(path, 'w+')", ("a",)),
    ("for name in ['x.py', 'y.py']:\n    open(name, 'w')", ("x.py", "y.py")),
    ("open(f'plain.txt', 'w')", ("plain.txt",)),
    ("mode = 'w'\nopen('m.txt', mode)", ("m.txt",)),
    ("import shutil, os\nshutil.copy('a', 'b/a')\nos.replace('t.tmp', 'final.py')\nos.symlink('.', 'link')",
     ("b/a", "final.py", "link")),
    ("import fileinput\nfor line in fileinput.input('in.py', inplace=True):\n    print(line, end='')", ("in.py",)),
    ("import fileinput\nfor line in fileinput.input(['a.py', 'b.py']):\n    print(line)", ()),  # not in place
    ("import matplotlib.pyplot as plt\nplt.savefig('plot.png')", ("plot.png",)),
    ("open('./pkg/../pkg/x.py', 'w')", ("pkg/x.py",)),
])
def test_paths_spelt_out_in_the_ways_scripts_spell_them(source, expected):
    assert writes(source) == expected


@pytest.mark.parametrize("source", [
    "import sys\nopen(sys.argv[1], 'w')",  # given at run time
    "open(input(), 'w')",
    "name = 'a.py'\nname = compute()\nopen(name, 'w')",  # one binding not known: the name is not known
    "def save(path):\n    open(path, 'w')\nsave('a.py')",  # a parameter
    "with open('a') as path:\n    open(path, 'w')",
    "n = 3\nopen(f'out_{n}.txt', 'w')",  # a formatted value
    "f = get_file()\nf.write('text')",  # a file object's write: which file is not known
    "open('a.py', 'w'",  # not Python
    "print(1 +)",
])
def test_what_a_script_computes_or_does_not_spell_out_names_nothing(source):
    assert writes(source) == ()


@pytest.mark.parametrize("source", [
    "p = p / 'x'\nopen(p, 'w')",  # a name bound to itself
    "def f(p):\n    p = p / 'sub'\n    p.write_text('x')",
    "p = q\nq = p\np.write_text('x')",
    "import os\nfor a in ['a', 'b', 'c', 'd', 'e', 'f', 'g', 'h', 'i', 'j']:\n    pass\n"
    "b = os.path.join(a, a, a, a, a)\nc = os.path.join(b, b)\nopen(c, 'w')",  # 10^10 combinations
    "x = " + "(" * 500 + "1" + ")" * 500,  # nested past what the parser reads
    "x = 'a'\n" * 40_000 + "open(x, 'w')",  # past the size an agent's script has
])
def test_a_hostile_script_names_nothing_and_costs_little(source):
    start = time.perf_counter()
    assert writes(source) == ()
    assert time.perf_counter() - start < 5  # ends: no blow-up, no endless recursion
