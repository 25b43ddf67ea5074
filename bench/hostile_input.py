"""Hostile request bodies through the parsers and serializers the API uses, one child process
per case: wall time and the memory the case added (peak RSS growth).

    .venv/bin/python bench/hostile_input.py              # every case
    .venv/bin/python bench/hostile_input.py --levels 7   # a smaller bomb (to time an old main)

Target: each bomb refused in under 100 ms and under 50 MB.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

CHILD = r"""
import io, json, os, resource, sys, time
sys.path.insert(0, os.environ["PORTAL_ROOT"])
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "portal.settings")
import django
django.setup()
from inventory.api.parsers import YAMLParser
from inventory.api.serializers import TopologyImportRequestSerializer
from portal.errors import ServiceError

body = sys.stdin.buffer.read()
before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
started = time.perf_counter()
try:
    # What TopologyImportView does with an application/yaml body.
    spec = YAMLParser().parse(io.BytesIO(body))
    serializer = TopologyImportRequestSerializer(data={"spec": spec})
    outcome = "accepted" if serializer.is_valid() else "refused by the serializer"
except ServiceError as exc:
    outcome = f"refused with {exc.status_code}"
elapsed = time.perf_counter() - started
grown = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before
print(json.dumps({"ms": round(elapsed * 1000, 1), "rss_growth_mb": round(grown / 1024, 1),
                  "outcome": outcome}))
"""


def alias_bomb(levels: int, width: int = 10) -> str:
    lines = ["a0: &a0 [" + ",".join(["lol"] * width) + "]"]
    for level in range(1, levels):
        lines.append(f"a{level}: &a{level} [" + ",".join([f"*a{level - 1}"] * width) + "]")
    return "\n".join(lines) + "\n"


def run_case(body: bytes) -> dict:
    environment = {**os.environ, "PORTAL_ROOT": str(ROOT), "DJANGO_LOG_LEVEL": "ERROR"}
    environment.pop("DATABASE_URL", None)
    environment.pop("REDIS_URL", None)
    result = subprocess.run(
        [sys.executable, "-c", CHILD],
        input=body,
        capture_output=True,
        env=environment,
        timeout=600,
        check=False,
    )
    if result.returncode != 0:
        return {"error": f"exit {result.returncode}: {result.stderr.decode()[-300:]}"}
    return json.loads(result.stdout.decode().strip().splitlines()[-1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--levels", type=int, default=9, help="alias bomb nesting (10**levels)")
    options = parser.parse_args()
    bomb = alias_bomb(options.levels).encode()
    cases = {
        "yaml_alias_bomb": bomb,
        "yaml_deep_nesting": b"[" * 50_000 + b"]" * 50_000,
        "yaml_oversized": b"# padding\n" * 200_000,
        "sakuraone_spec": (ROOT / "inventory/fixtures/sakuraone.yaml").read_bytes(),
    }
    report = {"alias_bomb_bytes": len(bomb), "alias_bomb_values": 10**options.levels}
    for name, body in cases.items():
        report[name] = run_case(body)
    bombs = [report[name] for name in cases if name != "sakuraone_spec"]
    report["targets"] = {
        "bombs_refused_under_100_ms": all(case.get("ms", 1e9) < 100 for case in bombs),
        "bombs_refused_under_50_mb": all(case.get("rss_growth_mb", 1e9) < 50 for case in bombs),
        "real_spec_accepted": report["sakuraone_spec"].get("outcome") == "accepted",
    }
    print(json.dumps(report, indent=2))


if __name__ == "__main__":
    main()
