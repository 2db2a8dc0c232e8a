"""Reading shell command lines: `syntax` splits them the way bash does, `programs` says
what they run (through wrappers, shells and ``eval``). The approval rules and the replay
evaluator both read lines here, so a line means one thing everywhere."""

from observations.shell.invocations import Invocation, ShellLine
from observations.shell.programs import read_line
from observations.shell.syntax import Pipeline, Redirect, SimpleCommand, parse_command, split_words
from observations.shell.words import Word

__all__ = ["Invocation", "Pipeline", "Redirect", "ShellLine", "SimpleCommand", "Word", "parse_command",
           "read_line", "split_words"]
