#!/usr/bin/env python3
"""Every module a target imports is one it declares: a target it depends on, or a product of a package it
depends on (`swift package describe --type json`), or a module of the toolchain. SwiftPM's
--explicit-target-dependency-import-check accepts modules that a dependency brings in transitively; this
check does not. Exit 1 with one line per undeclared import.

    python3 .ci/imports.py [describe.json]     # without a file it runs `swift package describe --type json`
"""
import json, os, re, subprocess, sys

TOOLCHAIN = {"Foundation", "FoundationEssentials", "FoundationNetworking", "Glibc", "Musl", "Darwin", "Dispatch",
             "Testing", "XCTest", "Synchronization", "_Concurrency", "Observation", "RegexBuilder", "CoreFoundation",
             "SwiftShims", "os", "Android", "WinSDK", "ucrt"}
IMPORT = re.compile(r'^(?:@[A-Za-z_]+(?:\([^)]*\))?\s+)*import\s+(?:(?:typealias|struct|class|enum|protocol|let|var|func)\s+)?([A-Za-z_][A-Za-z0-9_]*)', re.M)

def main():
    if len(sys.argv) > 1:
        d = json.load(open(sys.argv[1]))
    else:
        d = json.loads(subprocess.run(["swift", "package", "describe", "--type", "json"], check=True, capture_output=True, text=True).stdout)
    targets = {t["name"]: t for t in d["targets"]}
    bad = []
    for t in d["targets"]:
        declared = set(t.get("target_dependencies") or []) | set(t.get("product_dependencies") or [])
        # A target's own module, and C modules of system-library targets it depends on by name.
        declared.add(t["c99name"])
        for src in t.get("sources") or []:
            if not src.endswith(".swift"):
                continue
            path = os.path.join(d.get("path", "."), t["path"], src)
            try:
                text = open(path, encoding="utf-8").read()
            except OSError:
                continue
            for m in IMPORT.finditer(text):
                mod = m.group(1)
                if mod in TOOLCHAIN or mod in declared:
                    continue
                line = text[:m.start()].count("\n") + 1
                bad.append(f"{path}:{line}: {t['name']} imports {mod}, which it does not declare")
    for b in bad:
        print(b)
    if bad:
        print(f"imports: {len(bad)} undeclared import(s); add the dependency to the target in Package.swift", file=sys.stderr)
        return 1
    print(f"imports: every import of {len(targets)} targets is declared")
    return 0

sys.exit(main())
