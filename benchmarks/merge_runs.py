#!/usr/bin/python3
"""Joins the results of several benchmarks/run.sh --gpu-machine calls made one after another on the same machine
(each call of the device tool is limited to 10 minutes, so the models are split over calls with --models) into one
results file: the first call's machine record, with every call's command, start, duration and load averages, then
every call's results in order. Refuses calls from different GPUs or drivers, and from different corgy versions
unless --mixed-versions is given (then the machine record names every version, and each call keeps its own).

    benchmarks/merge_runs.py [--mixed-versions] call1/gpu-machine.jsonl call2/gpu-machine.jsonl ... \
        > docs/benchmarks/gpu-machine.jsonl
"""

import json
import sys


def main():
    arguments = sys.argv[1:]
    mixed_versions = "--mixed-versions" in arguments
    paths = [a for a in arguments if a != "--mixed-versions"]
    if not paths:
        raise SystemExit(__doc__)
    machine, records, versions = None, [], []
    for path in paths:
        with open(path) as results:
            lines = [json.loads(line) for line in results if line.strip()]
        own = [r for r in lines if r["framework"] == "machine"]
        if len(own) != 1:
            raise SystemExit(f"{path}: {len(own)} machine records, expected 1")
        own = own[0]
        if machine is None:
            machine = dict(own, calls=[])
        else:
            for key in ("gpus", "cpu") + (() if mixed_versions else ("corgy",)):
                if own.get(key) != machine.get(key):
                    raise SystemExit(f"{path}: {key} {own.get(key)!r} differs from {machine.get(key)!r} of "
                                     f"{paths[0]}: not one machine and tree")
            machine["command"] += "; then " + own["command"]
            machine["minutes"] = round(machine["minutes"] + own["minutes"], 1)
            machine["load_end"] = own.get("load_end", machine.get("load_end"))
        machine["calls"].append({key: own.get(key) for key in ("command", "started_utc", "minutes", "load_start",
                                                               "load_end", "corgy")})
        if own.get("corgy") not in versions:
            versions.append(own.get("corgy"))
        records += [r for r in lines if r["framework"] != "machine"]
    machine["corgy"] = ", ".join(str(v) for v in versions)
    print(json.dumps(machine))
    for record in records:
        print(json.dumps(record))


if __name__ == "__main__":
    main()
