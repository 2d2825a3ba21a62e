#!/usr/bin/env python3
"""Finds import cycles between the modules of each workspace crate.

A module is a file under CRATE/src (`foo.rs` or `foo/mod.rs`); an edge
A -> B is a `crate::`, `super::` or `self::` path in A's code (outside its
`#[cfg(test)] mod tests` block and comments) that names module B, parent
and child modules included. A cycle is a strongly connected set of two or
more modules. Prints each cycle and exits 1 when there is any.

    scripts/module-cycles.py            # every crate of the workspace
    scripts/module-cycles.py tools/src  # one crate
"""
import os
import re
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
CRATES = ["mad-wire", "mad-core", "mad-rmpp", "mad-agents", "mad-sm", "mad-sim",
          "mad-cm", "mad-testkit-wire", "mad-testkit", "tools", ".", "python"]
PATH = re.compile(r"\b((?:crate|super|self)(?:::super)*(?:::[A-Za-z_][A-Za-z0-9_]*)+)")
GROUP = re.compile(r"\buse ((?:crate|super|self)(?:::super)*(?:::[a-z_][a-z0-9_]*)*)::\{([^}]*)\}", re.S)


def modules(src_dir):
    mods = {}
    for dirpath, _, files in os.walk(src_dir):
        for f in files:
            if not f.endswith(".rs"):
                continue
            path = os.path.join(dirpath, f)
            rel = os.path.relpath(path, src_dir)[:-3].split(os.sep)
            if rel[-1] in ("mod", "lib", "main"):
                rel = rel[:-1]
            if "tests" in rel or (rel and rel[-1].endswith("_tests")):
                continue  # test-only modules
            mods[tuple(rel)] = path
    return mods


def resolve(mods, cur, path):
    parts = path.split("::")
    if parts[0] == "crate":
        base, parts = [], parts[1:]
    else:
        base = list(cur)
        while parts and parts[0] == "super":
            base, parts = base[:-1], parts[1:]
        if parts and parts[0] == "self":
            parts = parts[1:]
    best = tuple(base) if tuple(base) in mods else None
    for i in range(len(parts)):
        cand = tuple(base + parts[: i + 1])
        if cand not in mods:
            break
        best = cand
    return best


def edges_of(mods):
    edges = {m: set() for m in mods}
    for m, path in mods.items():
        with open(path, encoding="utf-8") as fh:
            src = fh.read()
        cut = src.find("#[cfg(test)]\nmod tests {")
        if cut >= 0:
            src = src[:cut]
        src = re.sub(r"//.*", "", src)
        targets = [resolve(mods, m, p.group(1)) for p in PATH.finditer(src)]
        for g in GROUP.finditer(src):
            for item in g.group(2).split(","):
                item = item.strip().split("::")[0].split(" ")[0]
                if item and item != "self":
                    targets.append(resolve(mods, m, g.group(1) + "::" + item))
        edges[m].update(t for t in targets if t is not None and t != m)
    return edges


def cycles(edges):
    index, low, stack, on, found, counter = {}, {}, [], set(), [], [0]
    sys.setrecursionlimit(100000)

    def visit(v):
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on.add(v)
        for w in edges[v]:
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                found.append(comp)

    for v in edges:
        if v not in index:
            visit(v)
    return found


def main():
    dirs = sys.argv[1:] or [os.path.join(ROOT, c, "src") for c in CRATES]
    bad = 0
    for d in dirs:
        found = cycles(edges_of(modules(d)))
        for comp in found:
            names = sorted("::".join(m) or "crate" for m in comp)
            print(f"{os.path.relpath(d, ROOT)}: import cycle between {', '.join(names)}")
        bad += len(found)
        print(f"{os.path.relpath(d, ROOT)}: {len(found)} cycles")
    sys.exit(1 if bad else 0)


if __name__ == "__main__":
    main()
