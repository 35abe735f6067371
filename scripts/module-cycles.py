#!/usr/bin/env python3
"""Import loops between the top-level modules of a crate.

Usage: scripts/module-cycles.py crates/belay-server/src

Reads every .rs file under SRC, maps it to its top-level module (the
first path component under src/: `connection/outputs.rs` is
`connection`, `shared.rs` is `shared`), collects the top-level modules it
names through `crate::NAME` (in `use` lines and paths), and prints each
group of modules that import each other in a loop (a strongly connected
component of more than one module). Exits 1 if there is any.

`#[cfg(test)]` code counts too, comments and doc links do not; `lib.rs` and `main.rs` are the crate's
root (they declare the modules) and are left out, but what they re-export
(`pub use shared::{Lifecycle, Server}`) is followed: `crate::Server`
names `shared`.

`--allow FROM:TO` leaves out one edge that is a deliberate loop (say why
where the check runs).
"""

import re
import sys
from pathlib import Path


def top_module(src: Path, file: Path) -> str:
    rel = file.relative_to(src)
    return rel.parts[0].removesuffix(".rs")


def reexports(src: Path, modules: set[str]) -> dict[str, str]:
    """Names the crate root re-exports from its own modules: name -> module."""
    names: dict[str, str] = {}
    for root in ("lib.rs", "main.rs"):
        path = src / root
        if not path.exists():
            continue
        text = path.read_text()
        for module, rest in re.findall(r"^\s*pub(?:\(crate\))?\s+use\s+([a-z_][a-z0-9_]*)::(\{[^}]*\}|[A-Za-z_][A-Za-z0-9_]*)\s*;", text, re.M):
            if module not in modules:
                continue
            for name in re.findall(r"[A-Za-z_][A-Za-z0-9_]*", rest):
                names[name] = module
    return names


def graph(src: Path) -> dict[str, set[str]]:
    modules = {p.name.removesuffix(".rs") for p in src.iterdir()
               if (p.suffix == ".rs" or p.is_dir()) and p.name not in ("lib.rs", "main.rs")}
    via_root = reexports(src, modules)
    edges: dict[str, set[str]] = {m: set() for m in modules}
    for file in src.rglob("*.rs"):
        if file.parent == src and file.name in ("lib.rs", "main.rs"):
            continue
        me = top_module(src, file)
        # Comments (doc links included) name no dependency.
        text = re.sub(r"//[^\n]*", "", file.read_text())
        # `crate::a::b`, `crate::{a, b::c}`
        for name in re.findall(r"\bcrate::([A-Za-z_][A-Za-z0-9_]*)", text):
            target = name if name in modules else via_root.get(name)
            if target and target != me:
                edges[me].add(target)
        for group in re.findall(r"\bcrate::\{([^}]*)\}", text):
            for name in re.findall(r"(?:^|[,{\s])([A-Za-z_][A-Za-z0-9_]*)(?=::|\s*[,}]|$)", group):
                target = name if name in modules else via_root.get(name)
                if target and target != me:
                    edges[me].add(target)
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
    args = sys.argv[1:]
    allowed = []
    while "--allow" in args:
        i = args.index("--allow")
        allowed.append(tuple(args[i + 1].split(":", 1)))
        del args[i:i + 2]
    src = Path(args[0] if args else "crates/belay-server/src")
    edges = graph(src)
    for source, target in allowed:
        if target not in edges.get(source, set()):
            print(f"--allow {source}:{target}: no such import (drop the allowance)")
            return 1
        edges[source].discard(target)
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
