"""``python -m ralphctl.plugin.arm``: the bridge from ``/ralph-loop`` to ``ralphctl.hook arm``.

Claude Code pastes ``$ARGUMENTS`` into the command's ``!`` block as raw text, so putting it on
a shell command line breaks on an apostrophe ("Fix the user's bug") and refuses ``$(…)``.
The command file sends it through a quoted heredoc instead; this module reads it from stdin,
splits it into arguments and runs the hook's ``arm`` with them, in this process. Gemini CLI
shell-quotes ``{{args}}`` inside a command's ``!{…}`` block, so its command passes the raw
text as one argument after ``--text`` (nothing after it: no text) instead of stdin.

Splitting is shell-like where a prompt needs it and literal elsewhere: whitespace separates
words; a word that is wholly ``"…"`` or ``'…'`` (or ``--flag="…"``) loses its quotes and keeps
its spaces, so ``--completion-promise "ALL DONE"`` and ``--completion-promise="ALL DONE"`` both
give ``ALL DONE``; every other quote and every backslash is an ordinary character.
"""

from __future__ import annotations

import re
import sys

TEXT_FLAG = "--text"
_WORD = re.compile(
    r"""(?P<flag>--[^\s=]+=)?(?:"(?P<double>[^"]*)"|'(?P<single>[^']*)')(?=\s|\Z)|(?P<plain>\S+)"""
)


def split_arguments(raw: str) -> list[str]:
    """The words of ``raw``; never fails, whatever quotes it holds."""
    words = []
    for match in _WORD.finditer(raw):
        if match["plain"] is not None:
            words.append(match["plain"])
        else:
            quoted = match["double"] if match["double"] is not None else match["single"]
            words.append((match["flag"] or "") + quoted)
    return words


def main(argv: list[str] | None = None) -> int:
    """Arm a loop with the arguments in the raw text (``--text RAW…``, else stdin); the hook's
    output and exit status pass through."""
    from ralphctl.hook.__main__ import main as hook

    given = sys.argv[1:] if argv is None else argv
    raw = " ".join(given[1:]) if given[:1] == [TEXT_FLAG] else sys.stdin.read()
    return hook(["arm", *split_arguments(raw)])


if __name__ == "__main__":
    sys.exit(main())
