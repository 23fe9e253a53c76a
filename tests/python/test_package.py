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
