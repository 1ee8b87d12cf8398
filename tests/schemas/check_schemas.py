#!/usr/bin/env python3
"""Checks that every schema in schemas/ is a valid JSON Schema (draft 2020-12), that each example document
under tests/schemas/examples/ validates against its schema, and that each `*.invalid.json` example does not.
Example files are named <schema>.<what>.json / <schema>.<what>.invalid.json.

Usage: check_schemas.py SOURCE_DIR
"""
import glob
import json
import os
import sys

import jsonschema


def main(source):
    failures = []
    schemas = {}
    for path in sorted(glob.glob(os.path.join(source, "schemas", "*.schema.json"))):
        name = os.path.basename(path)[: -len(".schema.json")]
        with open(path) as f:
            schema = json.load(f)
        try:
            jsonschema.Draft202012Validator.check_schema(schema)
        except jsonschema.SchemaError as e:
            failures.append(f"{path}: not a valid schema: {e.message}")
        schemas[name] = schema
    for required in ["trace", "info", "report", "plan"]:
        if required not in schemas:
            failures.append(f"schemas/{required}.schema.json is missing")
    examples = sorted(glob.glob(os.path.join(source, "tests", "schemas", "examples", "*.json")))
    checked = 0
    for path in examples:
        base = os.path.basename(path)
        schema_name = base.split(".")[0]
        if schema_name not in schemas:
            failures.append(f"{path}: no schema named {schema_name}")
            continue
        with open(path) as f:
            doc = json.load(f)
        errors = list(jsonschema.Draft202012Validator(schemas[schema_name]).iter_errors(doc))
        should_fail = base.endswith(".invalid.json")
        if should_fail and not errors:
            failures.append(f"{path}: validated but is meant to be invalid")
        if not should_fail and errors:
            failures.append(f"{path}: {errors[0].json_path}: {errors[0].message}")
        checked += 1
    # The demo trace shipped with the project is an interchange document too.
    demo = os.path.join(source, "examples", "traces", "demo_chain.json")
    with open(demo) as f:
        errors = list(jsonschema.Draft202012Validator(schemas["trace"]).iter_errors(json.load(f)))
    if errors:
        failures.append(f"{demo}: {errors[0].json_path}: {errors[0].message}")
    checked += 1
    for line in failures:
        print("FAIL", line)
    print(f"{checked - len(failures)} passed, {len(failures)} failed")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))
