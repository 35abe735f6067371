#!/usr/bin/env python3
"""Import loops between the top-level modules of a crate.

Usage: scripts/module-cycles.py crates/belay-server/src

Reads every .rs file under SRC, maps it to its top-level module (the
first path component under src/: `connection/outputs.rs` is
`connection`, `shared.rs` is `shared`), collects the top-level modules it
names through `crate::NAME` (in `use` lines and paths), and prints each
group of modules that import each other in a loop (a strongly connected
component of more than one module). Exits 1 if there is any.

`#[cfg(test)]` code counts too; `lib.rs` and `main.rs` are the crate's
root (they declare the modules) and are left out.
"""

import re
import sys
from pathlib import Path


def top_module(src: Path, file: Path) -> str:
    rel = file.relative_to(src)
    return rel.parts[0].removesuffix(".rs")


def graph(src: Path) -> dict[str, set[str]]:
    modules = {p.name.removesuffix(".rs") for p in src.iterdir()
               if (p.suffix == ".rs" or p.is_dir()) and p.name not in ("lib.rs", "main.rs")}
    edges: dict[str, set[str]] = {m: set() for m in modules}
    for file in src.rglob("*.rs"):
        if file.parent == src and file.name in ("lib.rs", "main.rs"):
            continue
        me = top_module(src, file)
        text = file.read_text()
        # `crate::a::b`, `crate::{a, b::c}`
        for name in re.findall(r"\bcrate::([a-z_][a-z0-9_]*)", text):
            if name in modules and name != me:
                edges[me].add(name)
        for group in re.findall(r"\bcrate::\{([^}]*)\}", text):
            for name in re.findall(r"(?:^|[,{\s])([a-z_][a-z0-9_]*)(?=::|\s*[,}]|$)", group):
                if name in modules and name != me:
                    edges[me].add(name)
    return edges


def loops(edges: dict[str, set[str]]) -> list[list[str]]:
    """Tarjan's strongly connected components, those of two or more."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []
    counter = [0]

    def visit(v: str) -> None:
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on_stack.add(v)
        for w in sorted(edges[v]):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    sys.setrecursionlimit(10_000)
    for v in sorted(edges):
        if v not in index:
            visit(v)
    return found


def main() -> int:
    src = Path(sys.argv[1] if len(sys.argv) > 1 else "crates/belay-server/src")
    edges = graph(src)
    found = loops(edges)
    for component in found:
        inside = set(component)
        print(f"import loop among {len(component)} modules of {src}:")
        for m in component:
            print(f"  {m} -> {', '.join(sorted(edges[m] & inside))}")
    if not found:
        print(f"{src}: {len(edges)} top-level modules, no import loop")
    return 1 if found else 0


if __name__ == "__main__":
    sys.exit(main())
