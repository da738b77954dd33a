#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0
"""The driver's import graph, checked against its declared floors and edges.

Each top-level module of drivers/infiniband/sw/rrxe (a file, or a folder with its files) is
a node; a path `crate::X` in code (comments aside) of module A, X another top-level module,
is an edge A -> X. scripts/import-edges.txt declares the floors (`floor NAME: modules`,
bottom first) and lists the edges allowed (`A -> B`). It fails on:
- a module on no floor, or an edge that runs up (from a floor to a higher one);
- any circle;
- an edge that is not listed (a new arrow: list it, where it runs down), or a listed edge
  the code no longer has (the list only shrinks as the structure improves).

Usage: import-graph.py DRIVER_DIR EDGES_FILE            (exit 0: the graph is the declared one)
       import-graph.py --floors DRIVER_DIR EDGES_FILE   (the floors, with their line counts)
"""
import os
import re
import sys


def edges(root):
    found = set()
    for dirpath, _, files in os.walk(root):
        for f in files:
            if not f.endswith('.rs'):
                continue
            path = os.path.join(dirpath, f)
            rel = os.path.relpath(path, root)
            node = rel.split(os.sep)[0].removesuffix('.rs')
            with open(path, encoding='utf-8') as src:
                text = '\n'.join(line.split('//')[0] for line in src)
            names = set(re.findall(r'\bcrate::([a-z_][a-z0-9_]*)', text))
            for group in re.findall(r'\bcrate::\{([^}]*)\}', text):
                names |= set(re.findall(r'(?:^|[,{\s])([a-z_][a-z0-9_]*)(?=::|\s*[,}]|$)', group))
            for name in names:
                if name != node and os.path.exists(os.path.join(root, name + '.rs')) or \
                        name != node and os.path.isdir(os.path.join(root, name)):
                    found.add((node, name))
    return found


def circles(es):
    graph = {}
    for a, b in es:
        graph.setdefault(a, set()).add(b)
    # Strongly connected components (Tarjan).
    index, low, stack, on, out, n = {}, {}, [], set(), [], [0]

    def visit(v):
        index[v] = low[v] = n[0]
        n[0] += 1
        stack.append(v)
        on.add(v)
        for w in graph.get(v, ()):
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
                out.append(sorted(comp))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return out


def parse(listed_file):
    listed, floors = set(), []
    with open(listed_file, encoding='utf-8') as f:
        for line in f:
            line = line.split('#')[0].strip()
            if line.startswith('floor '):
                name, mods = line[len('floor '):].split(':', 1)
                floors.append((name.strip(), mods.split()))
            elif line:
                a, b = (s.strip() for s in line.split('->'))
                listed.add((a, b))
    return listed, floors


def lines_of(root, node):
    path = os.path.join(root, node)
    files = [path + '.rs'] if os.path.exists(path + '.rs') else \
        [os.path.join(d, f) for d, _, fs in os.walk(path) for f in fs if f.endswith('.rs')]
    return sum(sum(1 for _ in open(f, encoding='utf-8')) for f in files)


def main():
    show = sys.argv[1] == '--floors'
    root, listed_file = sys.argv[1 + show], sys.argv[2 + show]
    listed, floors = parse(listed_file)
    level = {m: i for i, (_, mods) in enumerate(floors) for m in mods}
    if show:
        for name, mods in reversed(floors):
            counts = ', '.join(f'{m} {lines_of(root, m)}' for m in mods)
            total = sum(lines_of(root, m) for m in mods)
            print(f'{name:8} {total:6}  {counts}')
        return 0
    have = edges(root)
    bad = 0
    nodes = {x for e in have for x in e} | {
        n.removesuffix('.rs') for n in os.listdir(root)
        if n.endswith('.rs') and n != 'rdma_rrxe.rs' or os.path.isdir(os.path.join(root, n))}
    for n in sorted(nodes - set(level)):
        print(f'module {n} is on no floor: add it to a floor in {os.path.basename(listed_file)}')
        bad = 1
    for a, b in sorted(have):
        if a in level and b in level and level[a] < level[b]:
            print(f'edge {a} -> {b} runs up (floor {floors[level[a]][0]} to '
                  f'{floors[level[b]][0]})')
            bad = 1
    for a, b in sorted(have - listed):
        print(f'new edge {a} -> {b}: not in {os.path.basename(listed_file)}')
        bad = 1
    for a, b in sorted(listed - have):
        print(f'edge {a} -> {b} is gone: remove it from {os.path.basename(listed_file)}')
        bad = 1
    for comp in circles(have):
        print('circle: ' + ', '.join(comp))
        bad = 1
    print(f'{len(have)} edges between {len({x for e in have for x in e})} modules')
    return bad


if __name__ == '__main__':
    sys.exit(main())
