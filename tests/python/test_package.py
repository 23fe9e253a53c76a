"""The package's own promises to editors and type checkers: py.typed is there, and the extension's
type stubs (_ext.pyi) declare exactly what the extension defines."""
import ast
import os

from conftest import PACKAGE_DIR, clean_env, run_python


def stub_names(path):
    tree = ast.parse(open(path).read())
    names = set()
    for node in tree.body:
        if isinstance(node, (ast.FunctionDef, ast.ClassDef)):
            names.add(node.name)
        elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
            names.add(node.target.id)
        elif isinstance(node, ast.Assign):
            names.update(t.id for t in node.targets if isinstance(t, ast.Name))
    return names


def test_the_stubs_declare_the_extension():
    package = os.path.join(PACKAGE_DIR, "vxperf")
    assert os.path.exists(os.path.join(package, "py.typed"))
    # type-only names: aliases, and the class of NULL_SCOPE, which the module does not export
    declared = stub_names(os.path.join(package, "_ext.pyi")) - {"Widths", "Record", "NullContext"}
    proc = run_python("""
        from vxperf import _ext
        print(" ".join(n for n in dir(_ext) if not n.startswith("__")))
    """, env=clean_env())
    defined = set(proc.stdout.split())
    assert declared == defined, (sorted(declared - defined), sorted(defined - declared))


def package_imports():
    """{module: modules of the package it imports} from the sources, imports inside functions
    included (relative imports: the package's own)."""
    root = os.path.join(PACKAGE_DIR, "vxperf")
    graph = {}
    for folder, _, files in os.walk(root):
        for name in files:
            if not name.endswith(".py"):
                continue
            path = os.path.join(folder, name)
            parts = os.path.relpath(path, root)[:-3].split(os.sep)
            package = parts[:-1] if parts[-1] != "__init__" else parts[:-1]
            module = ".".join(parts if parts[-1] != "__init__" else parts[:-1]) or "vxperf"
            deps = graph.setdefault(module, set())
            for node in ast.walk(ast.parse(open(path).read())):
                if isinstance(node, ast.ImportFrom) and node.level:
                    base = package[:len(package) - node.level + 1]
                    if node.module:
                        deps.add(".".join(base + [node.module]))
                    else:
                        deps.update(".".join(base + [a.name]) for a in node.names)
    return graph


def test_the_package_has_no_import_cycle():
    graph = package_imports()
    assert "_state" in graph and "_records" in graph["integrations.accelerate"]

    def cycle_from(start, path, seen):
        for dep in sorted(graph.get(path[-1], ())):
            if dep == start:
                return path + [dep]
            if dep in graph and dep not in seen:
                seen.add(dep)
                found = cycle_from(start, path + [dep], seen)
                if found:
                    return found
        return None

    for module in sorted(graph):
        cycle = cycle_from(module, [module], set())
        assert cycle is None, " -> ".join(cycle)
