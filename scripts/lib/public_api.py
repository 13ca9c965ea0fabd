#!/usr/bin/env python3
"""The library's public surface, from the symbol graph `swift package dump-symbol-graph`
wrote: counts it, and lists every public symbol that has no documentation comment (members
that implement a protocol's requirement inherit the protocol's, and synthesized ones have
none to give). Exit status 1 if one is undocumented."""
import json
import sys

path = sys.argv[1]
graph = json.load(open(path))
inherits = {r["source"] for r in graph.get("relationships", []) if r.get("sourceOrigin")}
public = [
    s for s in graph["symbols"]
    if s.get("accessLevel") in ("public", "open") and "::SYNTHESIZED::" not in s["identifier"]["precise"]
]
types = [s for s in public if s["kind"]["identifier"] in ("swift.struct", "swift.class", "swift.enum", "swift.protocol", "swift.typealias")]
missing = [s for s in public if not s.get("docComment") and s["identifier"]["precise"] not in inherits]
module = graph["module"]["name"]
print(f"{module}: {len(public)} public symbols in {len(types)} types; {len(missing)} undocumented")
for s in sorted(missing, key=lambda s: ".".join(s["pathComponents"])):
    print(f"  undocumented: {s['kind']['displayName'].lower()} {'.'.join(s['pathComponents'])}")
sys.exit(1 if missing else 0)
