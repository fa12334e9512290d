#!/usr/bin/env python3
"""check_stats_schema.py — validate libgcmpi statistics JSON against
docs/stats-schema.json with the standard library only.

    check_stats_schema.py [--strict] SCHEMA STATS.json...
    check_stats_schema.py --self-test SCHEMA

Implements the JSON Schema keywords the schema uses: type, const, enum,
minimum, pattern, required, properties, patternProperties,
additionalProperties, items and local $ref (#/$defs/NAME); it refuses a
schema with any other validation keyword rather than ignore it. --strict
also reports fields an object's schema does not list (the schema leaves
them open for readers; the library must document every field it writes).
Exit status 0 when every file is valid, 1 otherwise, 2 on bad usage.
"""
import json
import re
import sys

KNOWN = {"$schema", "$id", "$ref", "$defs", "title", "description", "type", "const", "enum",
         "minimum", "pattern", "required", "properties", "patternProperties",
         "additionalProperties", "items"}
TYPES = {
    "object": lambda v: isinstance(v, dict),
    "array": lambda v: isinstance(v, list),
    "string": lambda v: isinstance(v, str),
    "integer": lambda v: isinstance(v, int) and not isinstance(v, bool),
    "number": lambda v: isinstance(v, (int, float)) and not isinstance(v, bool),
    "boolean": lambda v: isinstance(v, bool),
    "null": lambda v: v is None,
}


class Validator:
    def __init__(self, schema, strict):
        self.root = schema
        self.strict = strict
        self.errors = []

    def resolve(self, ref):
        if not ref.startswith("#/"):
            raise ValueError(f"only local $ref is supported, got {ref!r}")
        node = self.root
        for part in ref[2:].split("/"):
            node = node[part]
        return node

    def check(self, value, schema, where):
        unknown = set(schema) - KNOWN
        if unknown:
            raise ValueError(f"schema at {where} uses unsupported keywords {sorted(unknown)}")
        if "$ref" in schema:
            self.check(value, self.resolve(schema["$ref"]), where)
        if "type" in schema:
            types = schema["type"] if isinstance(schema["type"], list) else [schema["type"]]
            if not any(TYPES[t](value) for t in types):
                self.errors.append(f"{where}: {json.dumps(value)[:80]} is not of type "
                                   f"{' or '.join(types)}")
                return
        if "const" in schema and value != schema["const"]:
            self.errors.append(f"{where}: {json.dumps(value)[:80]} is not {json.dumps(schema['const'])}")
        if "enum" in schema and value not in schema["enum"]:
            self.errors.append(f"{where}: {json.dumps(value)[:80]} is not one of {schema['enum']}")
        if "minimum" in schema and TYPES["number"](value) and value < schema["minimum"]:
            self.errors.append(f"{where}: {value} is below the minimum {schema['minimum']}")
        if "pattern" in schema and isinstance(value, str) and not re.search(schema["pattern"], value):
            self.errors.append(f"{where}: {value!r} does not match {schema['pattern']!r}")
        if isinstance(value, dict):
            self.check_object(value, schema, where)
        if isinstance(value, list) and "items" in schema:
            for i, item in enumerate(value):
                self.check(item, schema["items"], f"{where}[{i}]")

    def check_object(self, value, schema, where):
        for name in schema.get("required", []):
            if name not in value:
                self.errors.append(f"{where}: required field {name!r} is missing")
        props = schema.get("properties", {})
        patterns = schema.get("patternProperties", {})
        extra = schema.get("additionalProperties", True)
        for name, item in value.items():
            at = f"{where}.{name}"
            matched = False
            if name in props:
                self.check(item, props[name], at)
                matched = True
            for pattern, sub in patterns.items():
                if re.search(pattern, name):
                    self.check(item, sub, at)
                    matched = True
            if matched:
                continue
            if extra is False:
                self.errors.append(f"{at}: field not allowed here")
            elif isinstance(extra, dict):
                self.check(item, extra, at)
            elif self.strict and (props or patterns):
                self.errors.append(f"{at}: field is not documented in the schema")


def validate(schema, doc, strict):
    v = Validator(schema, strict)
    v.check(doc, schema, "$")
    return v.errors


def self_test(schema):
    """The checker must catch what it claims to: each broken copy of a
    minimal valid document has to fail, the document itself pass."""
    row = {k: 0 for k in schema["$defs"]["collective"]["required"]}
    row.update(comm="MPI_COMM_WORLD", comm_size=2, collective="allreduce", codec="topk", ranks=2)
    good = {"schema_version": 1, "library": "libgcmpi", "version": "0", "build": "", "mpi": "",
            "ranks": 2, "config_hash": "0123456789abcdef", "config": {"GCMPI_CODEC": "topk"},
            "calls_not_float_sum": 0, "nonblocking_passed": {"calls": 0, "bytes": 0},
            "collectives": [row],
            "timelines": [{"comm": "c", "collective": "allreduce", "codec": "topk", "stride": 1,
                           "points": [{"call": 0, "calls": 1, "ratio": None}]}],
            "warnings": []}
    assert not validate(schema, good, True), validate(schema, good, True)
    broken = [
        lambda d: d.pop("schema_version"),
        lambda d: d.update(schema_version=2),
        lambda d: d.update(ranks="2"),
        lambda d: d.update(config_hash="xyz"),
        lambda d: d["config"].update(GCMPI_CODEC=1),
        lambda d: d["config"].update(codec="topk"),
        lambda d: d["collectives"][0].update(collective="bcast"),
        lambda d: d["collectives"][0].update(bytes_sent=-1),
        lambda d: d["collectives"][0].pop("ratio"),
        lambda d: d["collectives"][0].update(new_counter=3),  # undocumented (strict)
        lambda d: d["timelines"][0]["points"][0].update(ratio="x"),
        lambda d: d.update(warnings=[1]),
        lambda d: d["nonblocking_passed"].pop("bytes"),
    ]
    for i, breaks in enumerate(broken):
        doc = json.loads(json.dumps(good))
        breaks(doc)
        if not validate(schema, doc, True):
            print(f"self-test: broken document {i} was accepted: {json.dumps(doc)[:300]}")
            return 1
    print(f"self-test: ok (1 valid document accepted, {len(broken)} broken ones refused)")
    return 0


def main(argv):
    strict = "--strict" in argv
    args = [a for a in argv if a not in ("--strict", "--self-test")]
    if not args or (len(args) < 2 and "--self-test" not in argv):
        print(__doc__, file=sys.stderr)
        return 2
    with open(args[0]) as f:
        schema = json.load(f)
    if "--self-test" in argv:
        return self_test(schema)
    status = 0
    for path in args[1:]:
        with open(path) as f:
            doc = json.load(f)
        errors = validate(schema, doc, strict)
        for e in errors[:20]:
            print(f"{path}: {e}")
        if errors:
            status = 1
        else:
            print(f"{path}: valid against {args[0]}{' (strict)' if strict else ''}")
    return status


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
