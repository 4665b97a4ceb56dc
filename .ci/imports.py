#!/usr/bin/env python3
"""Every module a target imports is one it declares: a target it depends on, or a product of a package it
depends on (`swift package describe --type json`), or a module of the toolchain. SwiftPM's
--explicit-target-dependency-import-check accepts modules that a dependency brings in transitively; this
check does not. Exit 1 with one line per undeclared import.

Two layer rules as well (docs/design.md): no output target (those LinkedOutputs lists) imports VLoggerCore or
anything built on it, and no driver (those LinkedDrivers lists) imports anything above Readers (a target built
on Readers, the store, the configuration or the outbox). Exit 1 with one line per import that breaks one.

    python3 .ci/imports.py [describe.json]     # without a file it runs `swift package describe --type json`
"""
import json, os, re, subprocess, sys

TOOLCHAIN = {"Foundation", "FoundationEssentials", "FoundationNetworking", "Glibc", "Musl", "Darwin", "Dispatch",
             "Testing", "XCTest", "Synchronization", "_Concurrency", "Observation", "RegexBuilder", "CoreFoundation",
             "SwiftShims", "os", "Android", "WinSDK", "ucrt"}
IMPORT = re.compile(r'^[ \t]*(?:@[A-Za-z_]+(?:\([^)]*\))?\s+)*(?:(?:public|package|internal|fileprivate|private)\s+)?import\s+(?:(?:typealias|struct|class|enum|protocol|let|var|func)\s+)?([A-Za-z_][A-Za-z0-9_]*)', re.M)

def code(text):
    """The text with multi-line string literals and block comments blanked (their lines kept): an `import` line
    inside a Python script in a test's string is not an import of the test's."""
    text = re.sub(r'#*"""[\s\S]*?"""#*', lambda m: "\n" * m.group(0).count("\n"), text)
    return re.sub(r'/\*[\s\S]*?\*/', lambda m: "\n" * m.group(0).count("\n"), text)


def imports(d, t):
    """Each import of the target's Swift sources: (path, line, module)."""
    for src in t.get("sources") or []:
        if not src.endswith(".swift"):
            continue
        path = os.path.join(d.get("path", "."), t["path"], src)
        try:
            text = code(open(path, encoding="utf-8").read())
        except OSError:
            continue
        for m in IMPORT.finditer(text):
            yield path, text[:m.start()].count("\n") + 1, m.group(1)


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
        for path, line, mod in imports(d, t):
            if mod not in TOOLCHAIN and mod not in declared:
                bad.append(f"{path}:{line}: {t['name']} imports {mod}, which it does not declare")
    bad += layers(d, targets)
    for b in bad:
        print(b)
    if bad:
        print(f"imports: {len(bad)} import(s) undeclared or across a layer; declare the dependency in Package.swift, or move the code to its layer", file=sys.stderr)
        return 1
    print(f"imports: every import of {len(targets)} targets is declared")
    return 0

def layers(d, targets):
    """The layer rules: output targets stay off VLoggerCore, drivers stay below what is above Readers."""
    def closure(name, seen=None):
        seen = set() if seen is None else seen
        for dep in targets.get(name, {}).get("target_dependencies") or []:
            if dep not in seen:
                seen.add(dep)
                closure(dep, seen)
        return seen
    def built_on(bases):
        return {n for n in targets if n in bases or closure(n) & bases}
    rules = []
    linked_outputs = targets.get("LinkedOutputs")
    if linked_outputs:
        outputs = set(linked_outputs.get("target_dependencies") or []) - {"VLoggerOutbox"}
        rules.append((outputs, built_on({"VLoggerCore"}), "an output target may not import {mod} (outputs are plug-ins below VLoggerCore)"))
    linked_drivers = targets.get("LinkedDrivers")
    if linked_drivers:
        drivers = set(linked_drivers.get("target_dependencies") or []) - {"Readers"}
        above = built_on({"VLoggerStore", "VLoggerConfig", "VLoggerOutbox"}) | (built_on({"Readers"}) - {"Readers"})
        rules.append((drivers, above, "a driver may not import {mod}, which is above Readers"))
    bad = []
    for owners, forbidden, why in rules:
        for name in sorted(owners):
            t = targets.get(name)
            if not t:
                continue
            # A forbidden dependency declared in Package.swift, imported or not.
            for dep in sorted(set(t.get("target_dependencies") or []) & forbidden - {name}):
                bad.append(f"Package.swift: {name} depends on {dep}: " + why.format(mod=dep))
            for path, line, mod in imports(d, t):
                if mod in forbidden and mod != name:
                    bad.append(f"{path}:{line}: {name}: " + why.format(mod=mod))
    return bad

sys.exit(main())
