#!/usr/bin/env python3
"""Checks that no unity batch of a build holds two file-local functions of one name.

A unity build (HVD_UNITY_BUILD, CMakeLists.txt) compiles up to 8 source files of a target as one
translation unit. Two files' file-local helpers (in an anonymous namespace, or `static`) of the
same name then meet: with the same parameters the batch fails to compile, which is loud; with
different parameters they quietly become overloads, and a call may pick the other file's helper
after an implicit conversion. This check names every such pair, so the rule (a name a file keeps
to itself differs from those of the other files of its target) holds without relying on luck.

Usage: check_unity_names.py BUILD_DIR. Exit status 0 when no batch has a clash, 1 otherwise,
2 on bad usage. Reads the batches CMake wrote (BUILD_DIR/**/Unity/unity_*.cxx).
"""

import pathlib
import re
import sys

_KEYWORDS = {"if", "for", "while", "switch", "return", "sizeof", "decltype", "alignof",
             "static_assert", "noexcept", "catch"}


def _in_number(text, i):
    """True when the quote at text[i] sits inside a number literal (a digit separator)."""
    j = i
    while j > 0 and (text[j - 1].isalnum() or text[j - 1] in "'_."):
        j -= 1
    return j < i and text[j].isdigit()


def _strip(text):
    """Text with comments, string and character literals blanked (newlines kept)."""
    out = []
    i, n = 0, len(text)
    while i < n:
        c = text[i]
        if text.startswith("//", i):
            j = text.find("\n", i)
            j = n if j < 0 else j
            i = j
        elif text.startswith("/*", i):
            j = text.find("*/", i + 2)
            j = n if j < 0 else j + 2
            out.append("\n" * text.count("\n", i, j))
            i = j
        elif c == 'R' and text.startswith('R"', i):
            m = re.match(r'R"([^(\s]*)\(', text[i:])
            if not m:
                out.append(c)
                i += 1
                continue
            end = text.find(")" + m.group(1) + '"', i)
            j = n if end < 0 else end + len(m.group(1)) + 2
            out.append('""' + "\n" * text.count("\n", i, j))
            i = j
        elif c == "'" and _in_number(text, i):
            out.append(c)  # a digit separator (3'000'001), not a character literal
            i += 1
        elif c in "\"'":
            j = i + 1
            while j < n and text[j] != c:
                j += 2 if text[j] == "\\" else 1
            out.append(c + c)
            i = j + 1
        else:
            out.append(c)
            i += 1
    return "".join(out)


def _function_name(head):
    """The name a namespace-scope `head {` defines when it is a function, else None."""
    head = re.sub(r"^\s*template\s*<[^{;]*?>\s*", "", head.strip())
    if re.match(r"(class|struct|union|enum|namespace|extern)\b", head):
        return None
    paren = head.find("(")
    if paren < 0 or "=" in head[:paren]:
        return None
    m = re.search(r"([A-Za-z_]\w*)\s*$", head[:paren])
    if not m or m.group(1) in _KEYWORDS or "operator" in head[:paren]:
        return None
    if re.fullmatch(r"[A-Z][A-Z0-9_]*", m.group(1)):
        return None  # a macro (TEST, TEST_F): not a function of the file
    if head[:m.start()].rstrip().endswith("::"):
        return None  # a member or a namespace-qualified function: not file-local
    return m.group(1)


def file_local_functions(text):
    """Names of the functions `text` defines in an anonymous namespace or as `static`."""
    text = _strip(text)
    names = set()
    stack = []  # per open brace: "anon", "ns" or "other" (a class, a function, an initializer)
    head_start = 0  # where the text ahead of the next brace or semicolon starts
    for i, c in enumerate(text):
        if c == "}":
            if stack:
                stack.pop()
        elif c == "{":
            head = text[head_start:i]
            if "other" in stack:
                kind = "other"  # nested in a class or function body: not at namespace scope
            elif re.search(r"\bnamespace\s*$", head):
                kind = "anon"
            elif re.search(r'\bnamespace\s+[\w:]+\s*$|\bextern\s*""\s*$', head):
                kind = "ns"
            else:
                kind = "other"
                name = _function_name(head)
                static = re.match(r"\s*(template\s*<[^{;]*?>\s*)?static\b", head)
                if name and ("anon" in stack or static):
                    names.add(name)
            stack.append(kind)
        elif c != ";":
            continue
        head_start = i + 1
    return names


def main(argv):
    if len(argv) != 2 or not pathlib.Path(argv[1]).is_dir():
        print("usage: check_unity_names.py BUILD_DIR", file=sys.stderr)
        return 2
    build = pathlib.Path(argv[1])
    batches = sorted(build.glob("**/Unity/unity_*.cxx")) + sorted(build.glob("**/Unity/unity_*.c"))
    clashes = 0
    for batch in batches:
        sources = re.findall(r'^#include "([^"]+)"', batch.read_text(), re.M)
        seen = {}
        for source in sources:
            for name in file_local_functions(pathlib.Path(source).read_text(errors="replace")):
                seen.setdefault(name, []).append(source)
        for name, where in sorted(seen.items()):
            if len(where) > 1:
                clashes += 1
                print(f"{batch.relative_to(build)}: file-local function '{name}' is defined in "
                      f"{len(where)} files of one unity batch: {', '.join(where)}")
    print(f"check_unity_names: {len(batches)} unity batches, {clashes} clashing names")
    return 1 if clashes else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
