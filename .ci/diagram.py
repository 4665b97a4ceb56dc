#!/usr/bin/env python3
"""The dependency diagram of docs/design.md, made from Package.swift (`swift package describe --type json`), so that
the map cannot drift from the package. Shipped targets only (not tests, fuzzers, benches or test benches); an arrow
from a target to each target it depends on, less those it reaches through another (the transitive reduction).

    python3 .ci/diagram.py [describe.json]            # rewrite the diagram between the markers in docs/design.md
    python3 .ci/diagram.py --check [describe.json]    # exit 1 when docs/design.md's diagram is not the package's
"""
import json, os, subprocess, sys

DOC = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "docs", "design.md")
BEGIN, END = "<!-- targets:begin (made by .ci/diagram.py from Package.swift) -->", "<!-- targets:end -->"
# Not shipped: test benches and fuzzers (targets under bench/ and Tests/ are left out by their path).
NOT_SHIPPED = {"FEIGEmulator", "vlogger-vcard", "vlogger-feig-reader", "ISO15693Fuzzing", "ParserFuzzing"}


def shipped(d):
    out = {}
    for t in d["targets"]:
        if t["type"] == "test" or t["name"] in NOT_SHIPPED:
            continue
        if t["path"].startswith("bench") or t["path"].startswith("Tests"):
            continue
        out[t["name"]] = t
    # Only the executable `vlogger` and what it needs.
    need, todo = set(), ["vlogger"]
    while todo:
        n = todo.pop()
        if n in need or n not in out:
            continue
        need.add(n)
        todo += out[n].get("target_dependencies") or []
    return {n: out[n] for n in need}


def diagram(d):
    targets = shipped(d)
    deps = {n: set(t.get("target_dependencies") or []) & set(targets) for n, t in targets.items()}

    def reach(n, seen=None):
        seen = set() if seen is None else seen
        for m in deps[n]:
            if m not in seen:
                seen.add(m)
                reach(m, seen)
        return seen

    lines = ["```mermaid", "flowchart BT"]
    for n in sorted(targets):
        through = set()
        for m in deps[n]:
            through |= reach(m)
        for m in sorted(deps[n] - through):
            lines.append(f"    {n.replace('-', '_')}[{n}] --> {m.replace('-', '_')}[{m}]")
    lines.append("```")
    return "\n".join(lines)


def main():
    args = [a for a in sys.argv[1:] if a != "--check"]
    check = "--check" in sys.argv[1:]
    if args:
        d = json.load(open(args[0]))
    else:
        d = json.loads(subprocess.run(["swift", "package", "describe", "--type", "json"], check=True,
                                      capture_output=True, text=True).stdout)
    text = open(DOC, encoding="utf-8").read()
    if BEGIN not in text or END not in text:
        print(f"diagram: {DOC} has no markers {BEGIN} … {END}", file=sys.stderr)
        return 1
    a, b = text.index(BEGIN) + len(BEGIN), text.index(END)
    new = text[:a] + "\n" + diagram(d) + "\n" + text[b:]
    if check:
        if new != text:
            print("diagram: docs/design.md's dependency diagram is not Package.swift's; run python3 .ci/diagram.py",
                  file=sys.stderr)
            return 1
        print("diagram: docs/design.md's dependency diagram is Package.swift's")
        return 0
    open(DOC, "w", encoding="utf-8").write(new)
    print("diagram: docs/design.md rewritten")
    return 0


sys.exit(main())
