"""Loads a vlogger CSV export with the default CSV readers of pandas, DuckDB and Polars (no options: what a data
person types first) and compares every cell with the JSON-lines export of the same rows, which keeps strings as
strings and numbers as numbers. Prints `ok <tool> <rows> rows <cells> cells` per tool; exits 1 on the first tool
that misreads a cell, naming the row, the column, what the tool gave and what the JSON says.

What counts as the same value (docs/json.md, "CSV and data tools"):
- bytes: the CSV's `\\x` prefix is vlogger's marker, so a cell `\\x42494E35` is the JSON string "42494E35";
- times: the ISO 8601 text, or the same instant when a tool parses it (DuckDB makes a TIMESTAMP WITH TIME ZONE);
- block numbers and flags (`0xF8`): the text, or the same integer when a tool parses it (DuckDB does);
- a nested JSON value (NDEF records): text whose JSON is equal;
- text that begins with = + - @ (OWASP's CSV injection characters): the text after a leading `'`;
- numbers: numbers (never text) of the same value; a missing JSON member: a tool's missing value.
"""
import csv
import datetime
import json
import math
import sys

import duckdb
import pandas
import polars


def missing(v):
    return v is None or v is pandas.NA or (isinstance(v, float) and math.isnan(v))


def same(got, want):
    if want is None:
        return missing(got)
    if missing(got):
        return False
    if isinstance(want, (dict, list)):
        return isinstance(got, str) and json.loads(got) == want
    if isinstance(want, bool):
        return False
    if isinstance(want, (int, float)):
        return not isinstance(got, (str, bool)) and float(got) == float(want)
    # want is a string
    if isinstance(got, str):
        if got == want:
            return True
        if got.startswith("\\x") and got[2:] == want:
            return True
        return want[:1] in ("=", "+", "-", "@", "\t", "\r") and got == "'" + want
    if isinstance(got, datetime.datetime) and want.endswith("Z"):
        return got == datetime.datetime.fromisoformat(want[:-1] + "+00:00")
    if isinstance(got, int) and not isinstance(got, bool) and want.startswith("0x"):
        return got == int(want, 16)
    return False


def main(csv_path, jsonl_path):
    with open(jsonl_path, encoding="utf-8") as f:
        expected = [json.loads(line) for line in f if line.strip()]
    with open(csv_path, encoding="utf-8", newline="") as f:
        header = next(csv.reader(f))
    for member in {k for row in expected for k in row}:
        if member not in header:
            print(f"the CSV has no column {member!r} (header {header})")
            return 1
    frame = pandas.read_csv(csv_path)
    tables = {
        "pandas " + pandas.__version__: (list(frame.columns), frame.astype(object).values.tolist()),
        "duckdb " + duckdb.__version__: (
            lambda r: ([d[0] for d in r.description], r.fetchall()))(duckdb.sql(f"SELECT * FROM read_csv('{csv_path}')")),
        "polars " + polars.__version__: (lambda p: (p.columns, p.rows()))(polars.read_csv(csv_path)),
    }
    failed = False
    for tool, (columns, rows) in tables.items():
        if columns != header or len(rows) != len(expected):
            print(f"{tool}: {len(rows)} rows, columns {columns}; expected {len(expected)} rows, {header}")
            failed = True
            continue
        cells = 0
        bad = []
        for i, (row, want) in enumerate(zip(rows, expected)):
            for name, got in zip(columns, row):
                cells += 1
                if not same(got, want.get(name)):
                    bad.append(f"row {i + 1} {name}: {got!r} ({type(got).__name__}), JSON {want.get(name)!r}")
        if bad:
            print(f"{tool}: {len(bad)} of {cells} cells misread, first: " + "; ".join(bad[:4]))
            failed = True
        else:
            print(f"ok {tool} {len(rows)} rows {cells} cells")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1], sys.argv[2]))
