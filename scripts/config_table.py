#!/usr/bin/env python3
"""Prints the GCMPI_* variable table (Markdown) from config/config_impl.h, the
one place the variables are declared; with --check README.md, fails when the
README's table differs from it (a meson test keeps the two in step)."""
import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def variables():
    text = (ROOT / "config" / "config_impl.h").read_text()
    block = text[text.index("#define GCMPI_CONFIG_VARS(X)"):text.index("typedef enum cfg_var")]
    block = block.replace("\\\n", " ")
    for m in re.finditer(r"X\(\s*(\w+),((?:\s*(?:\"(?:[^\"\\]|\\.)*\"\s*)+,?){5})\)", block):
        fields = []
        for part in re.split(r"\"\s*,\s*\"", m.group(2).strip().strip(",").strip()):
            fields.append(re.sub(r"\"\s+\"", "", part).strip().strip('"'))
        yield fields


def table():
    rows = ["| variable | type | default | allowed | meaning |", "|---|---|---|---|---|"]
    for name, typ, default, allowed, meaning in variables():
        rows.append(f"| `{name}` | {typ} | {('`' + default + '`') if default else '(none)'} | {allowed} | {meaning} |")
    return "\n".join(rows) + "\n"


def main():
    if len(sys.argv) == 3 and sys.argv[1] == "--check":
        readme = Path(sys.argv[2]).read_text()
        want = table()
        if want not in readme:
            sys.stderr.write("README.md's GCMPI_* table is out of date; regenerate it with "
                             "scripts/config_table.py and paste it in.\n")
            return 1
        print(f"README lists all {len(want.splitlines()) - 2} GCMPI_* variables")
        return 0
    sys.stdout.write(table())
    return 0


if __name__ == "__main__":
    sys.exit(main())
