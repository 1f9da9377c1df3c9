#!/usr/bin/env python3
"""The one change an emulated build makes to CUDA source: each launch

    kernel<<<grid, block[, shared[, stream]]>>>(arguments)

becomes a call the host compiler understands,

    ::emu::launch("kernel", ::emu::Config(grid, block...), [&](auto... a) { kernel(a...); }, arguments)

`__shared__ T name[N];` a reference to its place in the emulator's shared
memory, and `extern __shared__ T name[];` (dynamic shared memory) a pointer
to the launch's. Lines keep their numbers (errors point at the original
file: each output starts with a #line directive); comments, strings and
character literals are left alone.

  python3 emulator/rewrite.py OUT_DIR FILE...   writes OUT_DIR/FILE for each FILE
"""

from __future__ import annotations

import os
import re
import sys
from pathlib import Path


class RewriteError(Exception):
    pass


def code_mask(text: str) -> list[bool]:
    """True where a character is code (not in a comment, string or character literal)."""
    mask = [True] * len(text)
    i, n = 0, len(text)
    while i < n:
        c = text[i]
        if text.startswith("//", i):
            j = text.find("\n", i)
            j = n if j < 0 else j
        elif text.startswith("/*", i):
            j = text.find("*/", i + 2)
            j = n if j < 0 else j + 2
        elif c == 'R' and text.startswith('R"', i) and (i == 0 or not (text[i - 1].isalnum() or text[i - 1] == "_")):
            delim_end = text.find("(", i + 2)
            delim = text[i + 2:delim_end]
            j = text.find(")" + delim + '"', delim_end)
            j = n if j < 0 else j + len(delim) + 2
        elif c in "\"'":
            if c == "'" and i > 0 and (text[i - 1].isalnum()) and i + 1 < n and text[i + 1].isalnum():
                i += 1  # a digit separator: 1'000'000
                continue
            j = i + 1
            while j < n and text[j] != c:
                j += 2 if text[j] == "\\" else 1
            j += 1
        else:
            i += 1
            continue
        for k in range(i, min(j, n)):
            mask[k] = False
        i = j
    return mask


def _match_back(text: str, mask: list[bool], end: int, close: str, open_: str) -> int:
    """The index of the `open_` that matches the `close` at text[end]."""
    depth = 0
    for k in range(end, -1, -1):
        if not mask[k]:
            continue
        if text[k] == close:
            depth += 1
        elif text[k] == open_:
            depth -= 1
            if depth == 0:
                return k
    raise RewriteError(f"unbalanced '{close}' before a launch")


def kernel_start(text: str, mask: list[bool], at: int) -> int:
    """Where the kernel expression ending just before `at` (the <<<) begins:
    a name, qualified (ns::k), with template arguments (k<T, 4>), or in
    parentheses."""
    k = at - 1
    while k >= 0 and text[k].isspace():
        k -= 1
    if k >= 0 and text[k] == ")":
        return _match_back(text, mask, k, ")", "(")
    while True:
        if k >= 0 and text[k] == ">":
            k = _match_back(text, mask, k, ">", "<") - 1
            while k >= 0 and text[k].isspace():
                k -= 1
        end = k
        while k >= 0 and (text[k].isalnum() or text[k] == "_"):
            k -= 1
        if k == end:
            raise RewriteError("no kernel name before '<<<'")
        j = k
        while j >= 0 and text[j].isspace():
            j -= 1
        if j >= 1 and text[j] == ":" and text[j - 1] == ":":
            k = j - 2
            while k >= 0 and text[k].isspace():
                k -= 1
            if k < 0 or not (text[k].isalnum() or text[k] == "_" or text[k] == ">"):
                return j - 1  # ::k
            continue
        return k + 1


def _scan_to(text: str, mask: list[bool], start: int, stop: str) -> int:
    """The index of `stop` at nesting depth 0 from `start` (brackets of all kinds)."""
    depth = 0
    k = start
    while k < len(text):
        if mask[k]:
            if depth == 0 and text.startswith(stop, k):
                return k
            if text[k] in "([{":
                depth += 1
            elif text[k] in ")]}":
                depth -= 1
                if depth < 0:
                    break
        k += 1
    raise RewriteError(f"no '{stop}' to end a launch")


DECLARATOR_RE = re.compile(r"^(?P<type>.*?)(?P<name>[A-Za-z_]\w*)\s*(?P<dims>(?:\[[^\]]*\]\s*)*)$", re.S)
ALIGN_RE = re.compile(r"\b(?:alignas|__align__)\s*\(\s*[^()]*\)\s*")


def shared_declaration(decl: str) -> str:
    """`T a[N], b;` (the text after __shared__, without its ;) as references
    to the emulator's shared memory."""
    if "=" in decl:
        raise RewriteError("a __shared__ variable with an initializer (CUDA allows none)")
    parts, depth, start = [], 0, 0
    for k, c in enumerate(decl):
        depth += c in "([{<"
        depth -= c in ")]}>"
        if c == "," and depth == 0:
            parts.append(decl[start:k])
            start = k + 1
    parts.append(decl[start:])
    first = DECLARATOR_RE.match(ALIGN_RE.sub("", parts[0]).strip())
    if not first or not first["type"].strip():
        raise RewriteError(f"cannot read the __shared__ declaration '{decl.strip()}'")
    type_ = " ".join(first["type"].split())
    out = []
    for k, part in enumerate(parts):
        m = first if k == 0 else DECLARATOR_RE.match(ALIGN_RE.sub("", part).strip())
        if not m or (k > 0 and m["type"].strip()):
            raise RewriteError(f"cannot read the __shared__ declaration '{decl.strip()}'")
        name, dims = m["name"], "".join(m["dims"].split())
        slot = f"emu_slot_{name}_"
        ref = f"(&{name}){dims}" if dims else f"&{name}"
        out.append(f'static void* {slot} = nullptr; {type_} {ref} = '
                   f'::emu::sharedVariableRef<{type_}{dims}>({slot}, "{name}");')
    return " ".join(out) + "\n" * decl.count("\n")


def rewrite(text: str) -> str:
    text = re.sub(r"extern\s+__shared__\s+(?:alignas\s*\(\s*\d+\s*\)\s+|__align__\s*\(\s*\d+\s*\)\s+)?([^;\[]+?)\s+(\w+)\s*\[\s*\]\s*;",
                  r"\1* const \2 = reinterpret_cast<\1*>(::emu::dynamicShared());", text)
    mask = code_mask(text)
    out, done = [], 0
    for m in re.finditer(r"\b__shared__\b", text):
        if not mask[m.start()] or m.start() < done:
            continue
        end = text.find(";", m.end())
        if end < 0:
            raise RewriteError("a __shared__ declaration without its ;")
        out.append(text[done:m.start()])
        out.append(shared_declaration(text[m.end():end]))
        done = end + 1
    out.append(text[done:])
    text = "".join(out)
    mask = code_mask(text)
    out, done = [], 0
    i = text.find("<<<")
    while i >= 0:
        if not mask[i]:
            i = text.find("<<<", i + 3)
            continue
        start = kernel_start(text, mask, i)
        close = _scan_to(text, mask, i + 3, ">>>")
        paren = close + 3
        while paren < len(text) and text[paren].isspace():
            paren += 1
        if paren >= len(text) or text[paren] != "(":
            raise RewriteError("a launch without its argument list")
        end = _scan_to(text, mask, paren + 1, ")")
        kernel, config, args = text[start:i], text[i + 3:close], text[paren + 1:end]
        gap = text[close + 3:paren]  # whitespace, newlines kept
        name = " ".join(kernel.split()).replace("\\", "\\\\").replace('"', '\\"')
        # [&], though the call captures nothing (its closure's bytes are never
        # read): a constant the launch names, `k<ITEMS><<<...>>>` after
        # `constexpr int ITEMS = ...;`, is then seen as used; in a lambda
        # without a capture-default g++ warns that it is set but not used.
        call = (f'::emu::launch("{name}", ::emu::Config({config}), [&](auto... emu_a_) {{ {kernel}(emu_a_...); }}'
                f'{gap}{", " + args if args.strip() else args})')
        out.append(text[done:start])
        out.append(call)
        done = end + 1
        i = text.find("<<<", done)
    out.append(text[done:])
    return "".join(out)


def main(argv: list[str]) -> int:
    if len(argv) < 2:
        print(__doc__, file=sys.stderr)
        return 2
    out_dir = Path(argv[0])
    status = 0
    for name in argv[1:]:
        source = Path(name)
        target = out_dir / source
        try:
            text = rewrite(source.read_text())
        except RewriteError as err:
            print(f"{source}: cannot emulate this launch: {err}", file=sys.stderr)
            status = 1
            continue
        target.parent.mkdir(parents=True, exist_ok=True)
        new = f'#line 1 "{source}"\n{text}'
        if not target.exists() or target.read_text() != new:
            # whole or not at all: make may run this for one file while
            # another run rewrites them all
            tmp = target.with_name(f".{target.name}.{os.getpid()}")
            tmp.write_text(new)
            os.replace(tmp, target)
    return status


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
