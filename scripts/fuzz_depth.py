"""How deep a schemathesis stateful run got, read back from its NDJSON report.

A step's *depth* is its place in a chain of linked requests: a step that reused nothing from an
earlier answer is at depth 1, a step that followed a link from a depth-``d`` step is at depth
``d + 1`` (schemathesis records the parent of each linked case). A chain is *successful* when each
of its steps answered 2xx: a successful depth-3 chain is, say, create namespace -> create table
-> commit, each accepted. Per scenario the deepest chain and the deepest successful chain are
counted, and per operation the answers by status class. ``fuzz_rest_server.py`` prints this after
a run; on its own::

    python scripts/fuzz_depth.py REPORT_DIR
"""

from __future__ import annotations

import collections
import json
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any


@dataclass
class Depths:
    scenarios: int = 0
    steps: int = 0
    # scenarios whose deepest chain (any answers / only 2xx answers) has this many steps
    deepest: collections.Counter[int] = field(default_factory=collections.Counter)
    deepest_ok: collections.Counter[int] = field(default_factory=collections.Counter)
    # operation -> status class ("2xx", "4xx", ...) -> answers
    answers: dict[str, collections.Counter[str]] = field(default_factory=dict)

    def add(self, recorder: dict[str, Any]) -> None:
        cases: dict[str, Any] = recorder.get("cases") or {}
        if not cases:
            return
        interactions = recorder.get("interactions") or {}
        status: dict[str, int | None] = {}
        for case_id in cases:
            response = (interactions.get(case_id) or {}).get("response") or {}
            status[case_id] = response.get("status_code")
        depth: dict[str, tuple[int, bool]] = {}
        for case_id, node in cases.items():  # recorded in call order: a parent comes first
            parent = node.get("parent_id")
            ok = status[case_id] is not None and 200 <= status[case_id] < 300  # type: ignore[operator]
            above, above_ok = depth.get(parent, (0, True)) if parent else (0, True)
            depth[case_id] = (above + 1, ok and above_ok)
            value = node["value"]
            label = f"{value['method']} {value['path']}"
            code = status[case_id]
            self.answers.setdefault(label, collections.Counter())[f"{code // 100}xx" if code else "none"] += 1
        self.scenarios += 1
        self.steps += len(cases)
        self.deepest[max(d for d, _ in depth.values())] += 1
        self.deepest_ok[max((d for d, ok in depth.values() if ok), default=0)] += 1

    def markdown(self) -> str:
        """The figures as a markdown section (depth tables, operations with and without a 2xx)."""
        lines = [f"{self.scenarios} scenarios, {self.steps} steps", ""]
        lines += ["| depth d | scenarios reaching d | ... with every step 2xx |", "|---|---|---|"]
        top = max([*self.deepest, *self.deepest_ok, 1])
        for d in range(1, top + 1):
            reach = sum(n for k, n in self.deepest.items() if k >= d)
            reach_ok = sum(n for k, n in self.deepest_ok.items() if k >= d)
            lines.append(f"| {d} | {reach} | {reach_ok} |")
        lines += ["", "| operation | 2xx | 4xx | 5xx |", "|---|---|---|---|"]
        for label, counted in sorted(self.answers.items(), key=lambda kv: (-kv[1]["2xx"], kv[0])):
            lines.append(f"| `{label}` | {counted['2xx']} | {counted['4xx']} | {counted['5xx']} |")
        return "\n".join(lines)


def stateful_depths(report_dir: Path) -> Depths:
    """The depths of every stateful scenario in ``report_dir``'s NDJSON reports."""
    depths = Depths()
    for report in sorted(report_dir.glob("ndjson-*.ndjson")):
        with report.open() as lines:
            for line in lines:
                event = json.loads(line)
                (kind, body), *_ = event.items()
                if kind == "ScenarioFinished" and body.get("phase") == "stateful":
                    depths.add(body.get("recorder") or {})
    return depths


if __name__ == "__main__":
    print(stateful_depths(Path(sys.argv[1])).markdown())
