"""Checks launcher/'s layout: the include arrows between its parts point one way.

Usage: check_layout.py <launcher dir> <part>=<dep>,<dep>... ...

Each argument names a part (a subfolder of launcher/, built as hvd_launcher_<part>) and the
parts its library links (launcher/CMakeLists.txt, read from the target by CMake). A file of a
part may include its own part's headers and those of the parts it links, never a header at
launcher/'s root nor one of a part it does not link: that is what keeps every part a library
that links without the root. Every subfolder must be a declared part with a README.md.
Prints each violation with its file and line; exits 1 if there is any.
"""

import pathlib
import re
import sys

INCLUDE = re.compile(r'^#include "launcher/([^"]+)"')


def main(argv):
    root = pathlib.Path(argv[1])
    allowed = {}
    for arg in argv[2:]:
        part, _, deps = arg.partition("=")
        allowed[part] = {part} | {d for d in deps.split(",") if d}
    errors = []
    for folder in sorted(p for p in root.iterdir() if p.is_dir()):
        if folder.name not in allowed:
            errors.append(f"{folder}: not a part of launcher/CMakeLists.txt")
        elif not (folder / "README.md").is_file():
            errors.append(f"{folder}: no README.md (what it owns, what it may include)")
    for part, may_include in sorted(allowed.items()):
        for path in sorted((root / part).glob("*.[hc]*")):
            for number, line in enumerate(path.read_text().splitlines(), 1):
                match = INCLUDE.match(line)
                if not match:
                    continue
                target = match.group(1)
                target_part = target.split("/")[0] if "/" in target else "the root"
                if target_part not in may_include:
                    errors.append(f"{path}:{number}: includes launcher/{target}, but {part}/ "
                                  f"links only {', '.join(sorted(may_include))}")
    for error in errors:
        print(error)
    print(f"{len(allowed)} parts checked, {len(errors)} violations")
    return 1 if errors else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
