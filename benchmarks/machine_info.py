#!/usr/bin/python3
"""What benchmarks/run.sh ran on, as one JSON object: CPU, cores, memory, OS, compiler, package versions, the
Vulkan devices, corgy's commit, the date, the command and the load average. Read by report.py."""

import argparse
import json
import os
import platform
import re
import subprocess
import time


def command_output(*command):
    try:
        return subprocess.run(command, capture_output=True, text=True, timeout=30).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        return ""


def cpu_model():
    with open("/proc/cpuinfo") as cpuinfo:
        match = re.search(r"^model name\s*:\s*(.*)$", cpuinfo.read(), re.M)
    return match.group(1) if match else platform.processor()


def memory_gib():
    with open("/proc/meminfo") as meminfo:
        kib = int(re.search(r"MemTotal:\s*(\d+)", meminfo.read()).group(1))
    return round(kib / 2**20, 1)


def os_name():
    try:
        with open("/etc/os-release") as release:
            return re.search(r'^PRETTY_NAME="?([^"\n]*)', release.read(), re.M).group(1)
    except (OSError, AttributeError):
        return platform.system()


def package_version(name):
    return command_output("dpkg-query", "-W", "-f=${Version}", name)


def corgy_commit():
    commit = command_output("git", "rev-parse", "--short", "HEAD")
    if not commit:
        return "unknown (no git checkout)"
    changed = command_output("git", "status", "--porcelain", "--untracked-files=no")
    return commit + (" + uncommitted changes" if changed else "")


def gpus():
    return command_output("nvidia-smi", "--query-gpu=name,driver_version,memory.total", "--format=csv,noheader")


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--command", required=True)
    parser.add_argument("--started", type=int, required=True)
    parser.add_argument("--load-start", required=True)
    parser.add_argument("--blas-env-given", required=True)
    parser.add_argument("--blas-env-other", required=True)
    parser.add_argument("--quick", type=int, default=0)
    parser.add_argument("--devices", required=True)
    parser.add_argument("--compiler", help="who built the binaries, when not this machine's c++")
    parser.add_argument("--corgy", help="corgy's version, when this is no git checkout")
    args = parser.parse_args()
    with open(args.devices) as devices:
        vulkan = json.load(devices)
    info = {
        "framework": "machine",
        "cpu": cpu_model(),
        "cores": os.cpu_count(),
        "memory_gib": memory_gib(),
        "os": os_name(),
        "kernel": platform.release(),
        "compiler": args.compiler or (command_output("c++", "--version").splitlines() or [""])[0],
        "openblas_package": package_version("libopenblas0-pthread"),
        "mesa_package": package_version("mesa-vulkan-drivers"),
        "vulkan_devices": vulkan,
        "gpus": gpus(),
        "corgy": args.corgy or corgy_commit(),
        "started_utc": time.strftime("%Y-%m-%d %H:%M", time.gmtime(args.started)),
        "minutes": round((time.time() - args.started) / 60, 1),
        "command": args.command,
        "load_start": args.load_start,
        "load_end": " ".join(open("/proc/loadavg").read().split()[:3]),
        "openblas_coretype_given": args.blas_env_given,
        "blas_env_other": args.blas_env_other,
        "quick": bool(args.quick),
    }
    print(json.dumps(info))


if __name__ == "__main__":
    main()
