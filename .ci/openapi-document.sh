#!/usr/bin/env bash
# Writes the read API's OpenAPI document (Sources/VLoggerService/API/openapi.json) into OpenAPIDocument.swift,
# which serves it at /api/v1/openapi.json, with the document's SHA-256; a unit test fails when the document
# changes without this being run again. Run it after every change of openapi.json.
set -euo pipefail
cd "$(dirname "$0")/.."
api=Sources/VLoggerService/API
sum=$(sha256sum "$api/openapi.json" | cut -d' ' -f1)
python3 - "$api/openapi.json" "$api/OpenAPIDocument.swift" "$sum" <<'PY'
import sys
doc = open(sys.argv[1], encoding="utf-8").read()
assert '"""' not in doc and "\\" not in doc, "the document must not hold triple quotes or backslashes"
out = f'''// Written by .ci/openapi-document.sh from openapi.json; do not edit.
// swift-format-ignore-file

/// The read API's OpenAPI document, served at /api/v1/openapi.json.
enum OpenAPIDocument {{
    /// SHA-256 of openapi.json when this file was written.
    static let sha256 = "{sys.argv[3]}"
    static let json = """
{doc.rstrip()}
"""
}}
'''
open(sys.argv[2], "w", encoding="utf-8").write(out)
PY
echo "OpenAPIDocument.swift written from $api/openapi.json ($sum)"
