#!/usr/bin/env python3
"""Checks every #include of vxperf against its layering (cmake/layers.cmake, docs/ARCHITECTURE.md).

The build writes the layers it declares (folder, dependencies, the public headers each owns) into
a manifest; this script reads it and the sources, and fails on:

- a file of a layer including a header (internal, or public and owned by a layer: quoted or in
  angle brackets) of a layer it does not depend on, directly or through its dependencies;
- a public header including a public header of a layer its owner does not depend on;
- a front end (the LibTorch adapter, the command, the Python extension, fuzzers, benchmarks)
  including anything of src/ (by its layer's name or by a relative path out of its own folder),
  or vxperf/internal/ headers, instead of the public API;
- a source file under src/ that no layer or front end holds, or a public header no layer owns.

usage: check_includes.py --manifest build/vxperf_layers.json --root .
       check_includes.py --self-test      (shows that each kind of violation is caught)
"""
import argparse
import json
import os
import re
import sys
import tempfile

# Quoted includes, and angle-bracket ones of vxperf's own headers (system headers are no layer's).
INCLUDE = re.compile(r'^\s*#\s*include\s+(?:"([^"]+)"|<(vxperf/[^>]+)>)')


def includes(path):
    with open(path, encoding="utf-8", errors="replace") as f:
        for number, line in enumerate(f, 1):
            m = INCLUDE.match(line)
            if m:
                yield number, m.group(1) or m.group(2)


def closure(layers):
    """Every layer each layer may use: its dependencies and theirs."""
    deps = {l["name"]: set(l["depends"]) for l in layers}
    out = {}

    def walk(name, seen):
        for d in deps.get(name, ()):
            if d not in seen:
                seen.add(d)
                walk(d, seen)
        return seen

    for name in deps:
        out[name] = walk(name, set())
    return out


def sources(root, folder):
    base = os.path.join(root, folder)
    for dirpath, _, files in os.walk(base):
        for f in sorted(files):
            if f.endswith((".h", ".cpp")):
                yield os.path.join(dirpath, f)


def check(manifest, root):
    layers = manifest["layers"]
    front_ends = manifest.get("front_ends", [])
    allowed = closure(layers)
    folder_of = {}  # "base" -> layer name
    for l in layers:
        folder_of[os.path.basename(l["dir"])] = l["name"]
    header_owner = {}  # "vxperf/engine.h" -> layer
    for l in layers:
        for h in l["headers"]:
            header_owner["vxperf/" + h] = l["name"]
    for h in manifest.get("front_end_headers", []):
        header_owner["vxperf/" + h] = None  # a front end's: for programs, never for layers
    problems = []

    def uses(layer, target):
        return target == layer or target in allowed[layer]

    def may_use(layer):
        names = sorted(allowed[layer])
        return ", ".join(names) if names else "nothing below it"

    def rel(path):
        return os.path.relpath(path, root)

    def owner_of(include):
        """(kind, layer) of a quoted include: ("public", L), ("internal", L) or (None, None)."""
        if include.startswith("vxperf/"):
            if include not in header_owner:
                return "public?", None
            return "public", header_owner[include]
        folder = include.split("/", 1)[0]
        if "/" in include and folder in folder_of:
            return "internal", folder_of[folder]
        return None, None

    # Files of each layer, and the public headers each owns.
    for l in layers:
        name = l["name"]
        files = list(sources(root, l["dir"]))
        files += [os.path.join(root, "include", "vxperf", h) for h in l["headers"]]
        for path in files:
            public = path.startswith(os.path.join(root, "include"))
            for number, include in includes(path):
                kind, target = owner_of(include)
                where = f"{rel(path)}:{number}"
                if kind == "public?":
                    problems.append(f"{where}: includes {include}, a public header no layer owns")
                elif kind == "public" and target is None:
                    problems.append(f"{where}: {name} includes {include}, a front end's header")
                elif kind is None:
                    problems.append(f"{where}: includes \"{include}\": a layer's includes name "
                                    "their folder (\"base/stats.h\") or vxperf/")
                elif public and kind == "internal":
                    problems.append(f"{where}: public header includes the internal {include}")
                elif not uses(name, target):
                    problems.append(f"{where}: {name} includes {include} of {target}; {name} may "
                                    f"use only {may_use(name)}")

    # Front ends: the public API and their own headers.
    for fe in front_ends:
        for path in sources(root, fe):
            for number, include in includes(path):
                kind, target = owner_of(include)
                where = f"{rel(path)}:{number}"
                if kind == "internal" or include.startswith("vxperf/internal/"):
                    problems.append(f"{where}: the front end {fe} includes {include}: front ends "
                                    "use the public API only (include/vxperf/)")
                elif kind == "public?":
                    problems.append(f"{where}: includes {include}, a public header no layer owns")
                elif kind is None:
                    # Its own header, found beside it or at its root, and inside its own folder:
                    # a relative path out of it ("../../src/engine/engine_core.h") is no header
                    # of its own.
                    own = os.path.join(root, fe)
                    found = [os.path.normpath(p) for p in (os.path.join(os.path.dirname(path),
                                                                        include),
                                                           os.path.join(own, include))
                             if os.path.exists(p)]
                    inside = [p for p in found if p.startswith(own.rstrip("/") + "/")]
                    if found and not inside:
                        problems.append(f"{where}: the front end {fe} includes \"{include}\", "
                                        f"which is {rel(found[0])}, outside it: front ends use "
                                        "the public API only (include/vxperf/)")
                    elif not found:
                        problems.append(f"{where}: includes \"{include}\", which is neither public "
                                        f"nor {fe}'s own")

    # Nothing outside the layering.
    held = [l["dir"] for l in layers] + list(front_ends)
    for path in sources(root, "src"):
        r = rel(path)
        if not any(r.startswith(d.rstrip("/") + "/") for d in held):
            problems.append(f"{r}: in no layer (cmake/layers.cmake) and no front end")
    owned = set(header_owner)
    for path in sources(root, os.path.join("include", "vxperf")):
        h = "vxperf/" + os.path.relpath(path, os.path.join(root, "include", "vxperf"))
        if h not in owned:
            problems.append(f"include/{h}: owned by no layer (HEADERS of cmake/layers.cmake)")
    return problems


def self_test():
    """A tree with one violation of each kind: each must be reported."""
    tree = {
        "src/low/a.cpp": '#include "low/a.h"\n#include "high/b.h"\n',
        "src/low/e.cpp": '#include <vector>\n#include <vxperf/high.h>\n',
        "src/low/a.h": "",
        "src/high/b.h": '#include "low/a.h"\n',
        "src/stray/c.cpp": "",
        "src/front/d.cpp": '#include "low/a.h"\n#include "vxperf/high.h"\n'
                           '#include "vxperf/internal/x.h"\n#include "own.h"\n'
                           '#include "../low/a.h"\n',
        "src/front/own.h": "",
        "include/vxperf/low.h": '#include "vxperf/high.h"\n',
        "include/vxperf/high.h": '#include "vxperf/low.h"\n',
        "include/vxperf/internal/x.h": "",
        "include/vxperf/orphan.h": "",
    }
    manifest = {
        "layers": [
            {"name": "low", "dir": "src/low", "depends": [], "headers": ["low.h"]},
            {"name": "high", "dir": "src/high", "depends": ["low"],
             "headers": ["high.h", "internal/x.h"]},
        ],
        "front_ends": ["src/front"],
    }
    expected = [
        "src/low/a.cpp:2: low includes high/b.h of high",
        "src/low/e.cpp:2: low includes vxperf/high.h of high",
        "src/front/d.cpp:1: the front end src/front includes low/a.h",
        "src/front/d.cpp:5: the front end src/front includes \"../low/a.h\", which is src/low/a.h",
        "src/front/d.cpp:3: the front end src/front includes vxperf/internal/x.h",
        "include/vxperf/low.h:1: low includes vxperf/high.h of high",
        "src/stray/c.cpp: in no layer",
        "include/vxperf/orphan.h: owned by no layer",
    ]
    with tempfile.TemporaryDirectory() as root:
        for name, text in tree.items():
            path = os.path.join(root, name)
            os.makedirs(os.path.dirname(path), exist_ok=True)
            with open(path, "w") as f:
                f.write(text)
        problems = check(manifest, root)
    missed = [e for e in expected if not any(p.startswith(e) for p in problems)]
    if missed or len(problems) != len(expected):
        print("self-test: expected these problems:", *expected, sep="\n  ")
        print("got:", *problems, sep="\n  ")
        return 1
    print(f"self-test: all {len(expected)} violations caught")
    return 0


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--manifest")
    parser.add_argument("--root", default=".")
    parser.add_argument("--self-test", action="store_true")
    args = parser.parse_args()
    if args.self_test:
        return self_test()
    if not args.manifest:
        parser.error("--manifest is required (or --self-test)")
    with open(args.manifest) as f:
        manifest = json.load(f)
    problems = check(manifest, os.path.abspath(args.root))
    for p in problems:
        print(p)
    if problems:
        print(f"layering: {len(problems)} problem(s); see docs/ARCHITECTURE.md, 'Layers'")
        return 1
    print(f"layering: {len(manifest['layers'])} layers, every include in order")
    return 0


if __name__ == "__main__":
    sys.exit(main())
