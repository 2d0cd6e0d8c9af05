#!/usr/bin/env python3
"""Lists the configuration keys of UCX's rc_mlx5 interface and ib memory
domain tables, read from a UCX source tree (1.13.1: `apt-get source ucx`, or
the v1.13.1 tag of openucx/ucx).

usage: ucx-config-keys.py UCX_SOURCE_DIR > tests/data/ucx-1.13-config-keys.txt

Each output line is `<table> <NAME> <type> <default>`, where <table> is
`iface` (the rc_mlx5 interface configuration, UCX_RC_MLX5_<NAME>) or `md`
(the ib memory domain's, UCX_IB_<NAME>), <NAME> is the name `ucx_info -c`
prints after that prefix, <type> is UCX's UCS_CONFIG_TYPE_* name and
<default> the default after the enclosing tables' overrides (`-` when empty).
Fields under an `#if` are listed too (a build may or may not have them), as
are alias fields (their default is the aliased field's). Deprecated fields
are left out: UCX rejects setting them.
"""

import os
import re
import sys

# Where each table lives, relative to the source tree's src/uct.
FILES = [
    "base/uct_iface.c",
    "base/uct_md.c",
    "ib/base/ib_iface.c",
    "ib/base/ib_md.c",
    "ib/rc/base/rc_iface.c",
    "ib/mlx5/ib_mlx5.c",
    "ib/rc/accel/rc_mlx5_common.c",
    "ib/rc/accel/rc_mlx5_iface.c",
]
ROOTS = [("iface", "uct_rc_mlx5_iface_config_table"), ("md", "uct_ib_md_config_table")]
# Macros that stand for strings in the tables.
STRING_MACROS = {"UCT_IB_CONFIG_PREFIX": "IB_"}
# UCS_PP_MAKE_STRING arguments used as defaults, with their values in 1.13.
NUMERIC_MACROS = {"UCT_IB_MD_RCACHE_DEFAULT_ALIGN": "16", "UCS_SYS_CACHE_LINE_SIZE": "64"}


def strip_comments(text):
    text = re.sub(r"/\*.*?\*/", " ", text, flags=re.S)
    return re.sub(r"//[^\n]*", " ", text)


def expand_mpool_fields(body):
    """UCT_IFACE_MPOOL_CONFIG_FIELDS(prefix, max, grow, name, offset, desc)."""
    def expand(match):
        args = [a.strip() for a in split_top_level(match.group(1))]
        prefix = args[0].strip('"')
        return (
            f'{{"{prefix}MAX_BUFS", "{args[1]}", "", 0, UCS_CONFIG_TYPE_INT}},'
            f'{{"{prefix}BUFS_GROW", "{args[2]}", "", 0, UCS_CONFIG_TYPE_UINT}}'
        )
    return re.sub(r"UCT_IFACE_MPOOL_CONFIG_FIELDS\((.*?)\)\s*,?\s*(?=[{#]|$)", expand, body,
                  flags=re.S)


def split_top_level(text):
    """Splits at commas outside parentheses, braces and string literals."""
    parts, depth, current, in_string = [], 0, "", False
    for i, ch in enumerate(text):
        if in_string:
            current += ch
            if ch == '"' and text[i - 1] != "\\":
                in_string = False
            continue
        if ch == '"':
            in_string = True
        elif ch in "({[":
            depth += 1
        elif ch in ")}]":
            depth -= 1
        elif ch == "," and depth == 0:
            parts.append(current)
            current = ""
            continue
        current += ch
    if current.strip():
        parts.append(current)
    return parts


def string_value(expr):
    """The C string an expression of string literals and known macros makes;
    None for NULL."""
    expr = expr.strip()
    if expr == "NULL":
        return None
    for name, value in STRING_MACROS.items():
        expr = expr.replace(name, f'"{value}"')
    expr = re.sub(r"UCS_PP_MAKE_STRING\((\w+)\)",
                  lambda m: f'"{NUMERIC_MACROS.get(m.group(1), m.group(1))}"', expr)
    expr = re.sub(r"UCS_PP_QUOTE\(([^)]*)\)", lambda m: f'"{m.group(1).strip()}"', expr)
    return "".join(re.findall(r'"((?:[^"\\]|\\.)*)"', expr))


def parse_tables(source_dir):
    tables = {}
    for relative in FILES:
        path = os.path.join(source_dir, "src", "uct", relative)
        text = strip_comments(open(path, encoding="utf-8").read())
        for match in re.finditer(r"ucs_config_field_t\s+(\w+)\[\]\s*=\s*\{(.*?)\n\s*\};", text,
                                 re.S):
            body = expand_mpool_fields(match.group(2))
            body = "\n".join(line for line in body.splitlines()
                             if not line.strip().startswith("#"))
            fields = []
            for entry in re.findall(r"\{((?:[^{}]|\{[^{}]*\})*)\}", body):
                args = split_top_level(entry)
                if len(args) < 2 or args[0].strip() == "NULL":
                    continue
                kind = re.search(r"UCS_CONFIG_TYPE_(\w+)(?:\((\w+)\))?", args[-1])
                fields.append({
                    "name": string_value(args[0]),
                    "default": string_value(args[1]),
                    "type": kind.group(1) if kind else "?",
                    "arg": kind.group(2) if kind else None,
                    "offset": args[-2].strip() if len(args) >= 2 else "",
                })
            tables[match.group(1)] = fields
    return tables


def leaves(tables, table, ancestors=()):
    """(field, ancestor table fields) for every non-table field under table."""
    for field in tables[table]:
        if field["type"] == "TABLE":
            yield from leaves(tables, field["arg"], ancestors + (field,))
        else:
            yield field, ancestors


def answers_to(leaf_ancestors, depth):
    """Names relative to the table at `depth` that set a leaf: the bare
    name directly in it, else each enclosing table's prefix below it."""
    below = leaf_ancestors[depth:]
    return [""] if not below else [t["name"] for t in below]


def main():
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    tables = parse_tables(sys.argv[1])
    for root_name, root in ROOTS:
        found = list(leaves(tables, root))
        defaults = [f["default"] for f, _ in found]
        # Overrides of enclosing tables, innermost first so outer ones win.
        overrides = []
        for index, (field, ancestors) in enumerate(found):
            for depth, table in enumerate(ancestors):
                overrides.append((depth, table))
        applied = set()
        for depth, table in sorted(overrides, key=lambda o: -o[0]):
            if id(table) in applied or not table["default"]:
                continue
            applied.add(id(table))
            for assignment in filter(None, table["default"].split(";")):
                name, value = assignment.split("=", 1)
                for index, (field, ancestors) in enumerate(found):
                    if table not in ancestors:
                        continue
                    inner = ancestors.index(table) + 1
                    if any(prefix + field["name"] == name
                           for prefix in answers_to(ancestors, inner)):
                        defaults[index] = value
        by_offset = {f["offset"]: d for (f, _), d in zip(found, defaults) if d is not None}
        for (field, _), default in zip(found, defaults):
            if field["type"] == "DEPRECATED":
                continue
            if default is None:  # an alias: shares the aliased field's storage
                default = by_offset.get(field["offset"], "")
            print(root_name, field["name"], field["type"] + (f"({field['arg']})"
                  if field["arg"] else ""), default or "-")


if __name__ == "__main__":
    main()
