#!/usr/bin/env python3
"""The Grafana dashboard and the alert rules in ops/ watch only metrics that exist.

Usage: scripts/check-dashboard.py [DASHBOARD [RULES [DOC]]]
(defaults: ops/grafana/belay.json, ops/prometheus/belay-rules.yml,
docs/OPERATIONS.md)

Checks that DASHBOARD is a Grafana dashboard of the shape Grafana imports
(title, uid, schemaVersion, a `datasource` variable of Prometheus type and an
`instance` variable, panels with ids, grid positions and PromQL targets on
that data source, each filtered by $instance), and that every metric named in
a panel's `expr`, in the `instance` variable's query and in RULES' `expr`s is
in DOC's `## Metrics` section (its tables, subsections included, so
Prometheus' own `up` counts). Every alert in RULES must also be named in
DOC's `## Dashboards and alerts` section. The metric table itself is held
to what the server renders by crates/belay-server/tests/metrics_documented.rs.
Exits 1 with every problem listed.
"""

import json
import re
import sys
from pathlib import Path

# PromQL words that look like metric names and are not.
KEYWORDS = {"and", "or", "unless", "bool", "offset", "by", "without", "on",
            "ignoring", "group_left", "group_right", "inf", "nan"}


def section(doc: str, heading: str) -> str:
    """The text under `## heading`, up to the next `## ` heading."""
    start = doc.find(f"\n## {heading}\n")
    if start < 0:
        return ""
    rest = doc[start + len(heading) + 5:]
    end = rest.find("\n## ")
    return rest if end < 0 else rest[:end]


def documented_metrics(doc: str) -> set[str]:
    rows = re.findall(r"^\| `([A-Za-z_:][A-Za-z0-9_:]*)` \|", section(doc, "Metrics"), re.M)
    return set(rows)


def metric_names(expr: str) -> set[str]:
    """Metric names in a PromQL expression (functions, keywords, labels,
    durations, numbers and Grafana variables left out)."""
    expr = re.sub(r'"(?:[^"\\]|\\.)*"', '""', expr)  # string literals
    expr = re.sub(r"\{[^}]*\}", "", expr)  # label matchers
    expr = re.sub(r"\[[^\]]*\]", "", expr)  # ranges and subqueries
    expr = re.sub(r"\b(by|without|on|ignoring|group_left|group_right)\s*\([^)]*\)", "", expr)
    expr = re.sub(r"\boffset\s+-?\w+", "", expr)
    names = set()
    for match in re.finditer(r"(?<![\w$.])([A-Za-z_:][\w:]*)(\s*\()?", expr):
        if match.group(2) is None and match.group(1).lower() not in KEYWORDS:
            names.add(match.group(1))
    return names


def rule_exprs(rules: str) -> list[str]:
    """The `expr:` of each rule, on one line or as an indented block."""
    exprs, lines = [], rules.splitlines()
    for i, line in enumerate(lines):
        found = re.match(r"^(\s*)expr:\s*(.*)$", line)
        if not found:
            continue
        indent, value = len(found.group(1)), found.group(2).strip()
        if value in ("|", ">", "|-", ">-"):
            block = []
            for more in lines[i + 1:]:
                if more.strip() and len(more) - len(more.lstrip()) <= indent:
                    break
                block.append(more.strip())
            value = " ".join(block)
        exprs.append(value)
    return exprs


def check_dashboard(dash: dict, problems: list[str]) -> list[tuple[str, str]]:
    """Structure problems into `problems`; (where, expr) of every query."""
    for key, kind in (("title", str), ("uid", str), ("schemaVersion", int), ("panels", list)):
        if not isinstance(dash.get(key), kind):
            problems.append(f"dashboard: `{key}` missing or not a {kind.__name__}")
    if isinstance(dash.get("schemaVersion"), int) and dash["schemaVersion"] < 36:
        problems.append(f"dashboard: schemaVersion {dash['schemaVersion']} is older than Grafana 9")
    variables = {v.get("name"): v for v in dash.get("templating", {}).get("list", [])}
    source = variables.get("datasource", {})
    if source.get("type") != "datasource" or source.get("query") != "prometheus":
        problems.append("dashboard: no `datasource` variable of type datasource, query prometheus")
    queries = []
    instance = variables.get("instance", {})
    query = instance.get("query", {})
    query = query.get("query", "") if isinstance(query, dict) else query
    found = re.match(r"label_values\(\s*([A-Za-z_:][\w:]*)\s*,\s*instance\s*\)", query or "")
    if instance.get("type") != "query" or not found:
        problems.append("dashboard: no `instance` query variable `label_values(METRIC, instance)`")
    else:
        queries.append(("variable instance", found.group(1)))
    ids = set()
    for panel in dash.get("panels", []):
        where = f"panel {panel.get('id')} {panel.get('title')!r}"
        if not isinstance(panel.get("id"), int) or panel["id"] in ids:
            problems.append(f"{where}: id missing or repeated")
        ids.add(panel.get("id"))
        grid = panel.get("gridPos", {})
        if not all(isinstance(grid.get(k), int) for k in "hwxy") or grid["x"] + grid["w"] > 24:
            problems.append(f"{where}: gridPos needs integers h, w, x, y within 24 columns")
        if not panel.get("title") or not panel.get("type"):
            problems.append(f"{where}: title or type missing")
        if panel.get("type") == "row":
            continue
        if panel.get("datasource", {}).get("uid") != "${datasource}":
            problems.append(f"{where}: datasource is not ${{datasource}}")
        targets = panel.get("targets") or []
        if not targets:
            problems.append(f"{where}: no targets")
        for target in targets:
            expr = target.get("expr", "")
            if not target.get("refId") or not expr:
                problems.append(f"{where}: a target without refId or expr")
            elif '$instance' not in expr:
                problems.append(f"{where}: {expr!r} is not filtered by $instance")
            queries.append((where, expr))
    return queries


def main() -> int:
    args = sys.argv[1:]
    dash_path = Path(args[0] if len(args) > 0 else "ops/grafana/belay.json")
    rules_path = Path(args[1] if len(args) > 1 else "ops/prometheus/belay-rules.yml")
    doc_path = Path(args[2] if len(args) > 2 else "docs/OPERATIONS.md")
    doc = doc_path.read_text()
    documented = documented_metrics(doc)
    problems: list[str] = []
    if not documented:
        problems.append(f"{doc_path}: no metric rows under `## Metrics`")
    queries = check_dashboard(json.loads(dash_path.read_text()), problems)
    rules = rules_path.read_text()
    exprs = rule_exprs(rules)
    if not exprs:
        problems.append(f"{rules_path}: no `expr:` found")
    queries += [(f"{rules_path} rule", expr) for expr in exprs]
    for where, expr in queries:
        names = metric_names(expr)
        if not names:
            problems.append(f"{where}: no metric found in {expr!r}")
        for name in sorted(names - documented):
            problems.append(f"{where}: {name} is not in {doc_path}'s Metrics tables")
    runbook = section(doc, "Dashboards and alerts")
    for alert in re.findall(r"^\s*- alert:\s*(\w+)", rules, re.M):
        if f"`{alert}`" not in runbook:
            problems.append(f"{rules_path}: alert {alert} is not described in {doc_path}")
    for problem in problems:
        print(problem, file=sys.stderr)
    if problems:
        return 1
    print(f"{dash_path} and {rules_path}: {len(queries)} queries over "
          f"{len(documented)} documented metrics: ok")
    return 0


if __name__ == "__main__":
    sys.exit(main())
