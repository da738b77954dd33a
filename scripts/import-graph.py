#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0
"""The driver's import graph, checked against its declared edges.

Each top-level module of drivers/infiniband/sw/rrxe (a file, or a folder with its files) is
a node; a path `crate::X` in code (comments aside) of module A, X another top-level module,
is an edge A -> X. scripts/import-edges.txt lists the edges allowed. An edge that is not
listed fails (a new arrow, e.g. one running back up), and so does a listed edge the code no
longer has (the list only shrinks as the structure improves). The circles among the listed
edges are printed.

Usage: import-graph.py DRIVER_DIR EDGES_FILE      (exit 0: the graph is the declared one)
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


def main():
    root, listed_file = sys.argv[1], sys.argv[2]
    listed = set()
    with open(listed_file, encoding='utf-8') as f:
        for line in f:
            line = line.split('#')[0].strip()
            if line:
                a, b = (s.strip() for s in line.split('->'))
                listed.add((a, b))
    have = edges(root)
    bad = 0
    for a, b in sorted(have - listed):
        print(f'new edge {a} -> {b}: not in {os.path.basename(listed_file)}')
        bad = 1
    for a, b in sorted(listed - have):
        print(f'edge {a} -> {b} is gone: remove it from {os.path.basename(listed_file)}')
        bad = 1
    for comp in circles(have):
        print('circle: ' + ', '.join(comp))
    print(f'{len(have)} edges between {len({x for e in have for x in e})} modules')
    return bad


if __name__ == '__main__':
    sys.exit(main())
