#!/usr/bin/env python3
"""Checks that no floor reaches a higher one (docs: the floors in README's "Layout").

  check_floors.py SOURCE_DIR              includes: every #include of a library file, headers
                                          and sources, that names a higher floor
  check_floors.py SOURCE_DIR --objects D  also link time: every symbol an object file of floor
                                          F uses that only an object of a higher floor defines
                                          (D: the dlf library's object directory)
  --private                               also lists includes of another floor's private files
                                          (e.g. "core/kernels/..." from graph/): not a failure

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


def symbols(obj):
    """(defined, undefined) demangled symbol sets of one object file (strong definitions only)."""
    out = subprocess.run(["nm", "-C", obj], capture_output=True, text=True, check=True).stdout
    defined, undefined = set(), set()
    for line in out.splitlines():
        kind, name = line[17:18], line[19:]
        if kind == "U":
            undefined.add(name)
        elif kind in "TDBR":
            defined.add(name)
    return defined, undefined


def upward_calls(objects_dir):
    objects = []
    for dirpath, _, names in os.walk(objects_dir):
        for name in names:
            if name.endswith(".o"):
                path = os.path.join(dirpath, name)
                rel = os.path.relpath(path, objects_dir)[: -len(".o")]
                if floor_of_path(rel) is not None:
                    objects.append((rel, floor_of_path(rel), *symbols(path)))
    definer = {}
    for rel, floor, defined, _ in objects:
        for name in defined:
            definer[name] = (rel, floor)
    found = []
    for rel, floor, _, undefined in sorted(objects):
        for name in sorted(undefined):
            if name in definer and definer[name][1] > floor:
                found.append(f"{rel}: {FLOORS[floor - 1]} calls {name} ({definer[name][0]})")
    return found


def main():
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("root")
    parser.add_argument("--objects")
    parser.add_argument("--private", action="store_true")
    args = parser.parse_args()
    upward, private = upward_includes(args.root, args.private)
    calls = upward_calls(args.objects) if args.objects else []
    for finding in upward + calls + private:
        print(finding)
    print(f"{len(upward)} upward includes, {len(calls)} upward calls"
          + (f", {len(private)} includes of another floor's private files" if args.private
             else ""))
    return 1 if upward or calls else 0


if __name__ == "__main__":
    sys.exit(main())
