#!/usr/bin/env python3
"""Checks that no floor reaches a higher one (docs: the floors in README's "Layout").

  check_floors.py SOURCE_DIR              includes: every #include of a library file, headers
                                          and sources, that names a higher floor
  check_floors.py SOURCE_DIR --objects D  also link time: every symbol an object file of floor
                                          F uses that only an object of a higher floor defines
                                          (D: the dlf library's object directory)
  --private                               also lists includes of another floor's private files
                                          (e.g. "core/kernels/..." from graph/): not a failure
  --cycles                                with --objects, also lists the objects that call each
                                          other round (allocator <-> sim device): not a failure

Prints one line per finding and exits 1 when a file reaches up a floor.
"""
import argparse
import os
import re
import subprocess
import sys

# Lower never includes higher. error.h and json_line.h sit under every floor; the umbrella
# <dlf/dlf.h> and the programs sit above them all.
FLOORS = ["device", "core", "autograd", "graph", "nn", "parallel", "models", "train", "plan",
          "apps"]
FLOOR = {name: level for level, name in enumerate(FLOORS, start=1)}
BASE_HEADERS = {"dlf/error.h", "dlf/json_line.h"}
# Upward calls known and left for later: autocast (core) keeps a parameter's cast only when
# autograd records it, and asks Tensor::is_leaf and requires_grad, whose bodies autograd/ holds.
KNOWN_CALLS = {
    ("core/autocast.cpp", "dlf::Tensor::is_leaf() const"),
    ("core/autocast.cpp", "dlf::Tensor::requires_grad() const"),
}
INCLUDE = re.compile(r'^\s*#\s*include\s*([<"])([^>"]+)[>"]', re.M)


def floor_of_path(rel):
    """The floor a file of the repository belongs to (by its path), or None."""
    parts = rel.split("/")
    if parts[0] == "include" and len(parts) > 2 and parts[1] == "dlf":
        if len(parts) == 3:
            return 0 if "/".join(parts[1:]) in BASE_HEADERS else FLOOR["apps"]
        return FLOOR.get(parts[2])
    return FLOOR.get(parts[0])


def floor_of_include(name, quoted, including_dir, root):
    """The repository file an include names and its floor, or (None, None) for others."""
    if name.startswith("dlf/"):
        rel = "include/" + name
    elif quoted and os.path.exists(os.path.join(root, including_dir, name)):
        rel = os.path.normpath(os.path.join(including_dir, name))
    elif quoted and os.path.exists(os.path.join(root, name)):
        rel = name
    else:
        return None, None
    return rel, floor_of_path(rel)


def library_files(root):
    for top in FLOORS + ["include"]:
        for dirpath, _, names in os.walk(os.path.join(root, top)):
            for name in sorted(names):
                if name.endswith((".h", ".cpp")):
                    yield os.path.relpath(os.path.join(dirpath, name), root)


def upward_includes(root, with_private):
    upward, private = [], []
    for rel in library_files(root):
        floor = floor_of_path(rel)
        if floor is None:
            continue
        with open(os.path.join(root, rel), encoding="utf-8") as f:
            text = f.read()
        for match in INCLUDE.finditer(text):
            target, target_floor = floor_of_include(match.group(2), match.group(1) == '"',
                                                    os.path.dirname(rel), root)
            if target_floor is None:
                continue
            line = text.count("\n", 0, match.start()) + 1
            finding = f"{rel}:{line}: {FLOORS[floor - 1] if floor else 'base'} includes {target}"
            if target_floor > floor:
                upward.append(finding)
            elif (with_private and not target.startswith("include/")
                  and target.split("/")[0] != rel.split("/")[0]):
                private.append(finding + " (another floor's private file)")
    return upward, private


def library_objects(root, objects_dir):
    """(source, floor, defined, undefined) of each object of the library's current sources,
    its symbols demangled, strong definitions only."""
    paths = {}
    for dirpath, _, names in os.walk(objects_dir):
        for name in names:
            if name.endswith(".o"):
                path = os.path.join(dirpath, name)
                rel = os.path.relpath(path, objects_dir)[: -len(".o")]
                # An object whose source is gone (moved, removed) is a leftover of an old build.
                if floor_of_path(rel) is not None and os.path.exists(os.path.join(root, rel)):
                    paths[path] = rel
    defined = {rel: set() for rel in paths.values()}
    undefined = {rel: set() for rel in paths.values()}
    out = subprocess.run(["nm", "-C", "-A", *sorted(paths)], capture_output=True, text=True,
                         check=True).stdout
    for line in out.splitlines():
        path, _, entry = line.partition(".o:")
        rel, kind, name = paths[path + ".o"], entry[17:18], entry[19:]
        if kind == "U":
            undefined[rel].add(name)
        elif kind in "TDBR":
            defined[rel].add(name)
    return sorted((rel, floor_of_path(rel), defined[rel], undefined[rel]) for rel in defined)


def calls_between(objects):
    """source -> {(source it calls, symbol)}: where each undefined symbol is defined."""
    definer = {name: rel for rel, _, defined, _ in objects for name in defined}
    return {rel: {(definer[name], name) for name in undefined if name in definer}
            for rel, _, _, undefined in objects}


def upward_calls(objects):
    floor = {rel: level for rel, level, _, _ in objects}
    found = []
    for rel, callees in calls_between(objects).items():
        for callee, name in sorted(callees):
            if floor[callee] > floor[rel] and (rel, name) not in KNOWN_CALLS:
                found.append(f"{rel}: {FLOORS[floor[rel] - 1]} calls {name} ({callee})")
    return found


def cycles(objects):
    """The sets of objects that call each other round (Tarjan's strongly connected components)."""
    edges = {rel: {callee for callee, _ in callees if callee != rel}
             for rel, callees in calls_between(objects).items()}
    index, low, stack, found = {}, {}, [], []

    def visit(v):
        index[v] = low[v] = len(index)
        stack.append(v)
        for w in edges[v]:
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while not component or component[-1] != v:
                component.append(stack.pop())
            if len(component) > 1:
                found.append(sorted(component))

    for v in sorted(edges):
        if v not in index:
            visit(v)
    return found


def main():
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("root")
    parser.add_argument("--objects")
    parser.add_argument("--private", action="store_true")
    parser.add_argument("--cycles", action="store_true")
    args = parser.parse_args()
    upward, private = upward_includes(args.root, args.private)
    objects = library_objects(args.root, args.objects) if args.objects else []
    calls = upward_calls(objects)
    for finding in upward + calls + private:
        print(finding)
    if args.cycles:
        for component in cycles(objects):
            print(f"a cycle of {len(component)} objects: {' '.join(component)}")
    print(f"{len(upward)} upward includes, {len(calls)} upward calls"
          + (f", {len(private)} includes of another floor's private files" if args.private
             else ""))
    return 1 if upward or calls else 0


if __name__ == "__main__":
    sys.exit(main())
