"""Reading back the CSV a bench run writes (perf.schema.write_csv), for the round-trip
tests: nothing in the package reads it (the record is the JSON, schema.load_json)."""
from __future__ import annotations

import csv
from dataclasses import fields

from cute_gemm.perf.schema import Row


def read_csv(path) -> list[Row]:
    """The rows of a bench CSV, typed by Row's fields: ints (blank: 0), optional floats
    (blank: None), the rest as written."""
    rows = []
    with open(path, newline="") as f:
        for d in csv.DictReader(f):
            kw = {}
            for fl in fields(Row):
                v = d.get(fl.name, "")
                if fl.type == "int":
                    kw[fl.name] = int(v) if v != "" else 0
                elif fl.type.startswith("float"):
                    kw[fl.name] = float(v) if v != "" else None
                else:
                    kw[fl.name] = v
            rows.append(Row(**kw))
    return rows
