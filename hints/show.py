#!/usr/bin/env python3
"""make hint Q=Q3: a question's second hint (the idea), shown only when asked.

The handout gives each question's first hint (a nudge); the second says how
the answer goes, which is most of the work. This says which hint it is about
to show and asks first (YES=1, or a "y" on standard input, answers for you).
"""

from __future__ import annotations

import sys
from pathlib import Path

HINTS = Path(__file__).resolve().parent


def main(argv: list[str]) -> int:
    known = sorted(p.stem for p in HINTS.glob("*.md"))
    asked = (argv[0] if argv else "").strip().upper()
    if asked.isdigit():
        asked = "Q" + asked
    if asked not in known:
        print(f"make hint: Q= names a question: {', '.join(known)} (e.g. make hint Q=Q3)", file=sys.stderr)
        return 2
    text = (HINTS / f"{asked}.md").read_text()
    if "--yes" not in argv:
        print(f"This shows hint 2 of {asked}, the idea: how the answer goes, which is most of the work.\n"
              f"Hint 1, the nudge, is in the handout under {asked}. Show hint 2? [y/N] ", end="", flush=True)
        answer = sys.stdin.readline().strip().lower()
        if answer not in ("y", "yes"):
            print(("\n" if not answer or not sys.stdin.isatty() else "") + "not shown" +
                  (f" (no answer: make hint Q={asked} YES=1 shows it)" if not answer else ""))
            return 1
        print()
    print(text, end="")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
