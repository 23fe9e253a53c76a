"""The README and docs/ stay true (#50): every link and every path they name exists (a link's
#anchor too), every `vxperf` command line in their code blocks names a real command and only
options its --help lists, every VIDEOX_PERF* variable they name is one the engine reads, each of
which is documented, and so is every record field and every event-script kind. The README stays
a short page for users: at most 320 lines, opening with the two commands, linking every page of
docs/."""
import glob
import os
import re
import subprocess

import pytest

from conftest import CLI, REPO

README = os.path.join(REPO, "README.md")
DOCS = sorted(glob.glob(os.path.join(REPO, "docs", "*.md")))
PAGES = [README] + DOCS
# The README's two commands, exactly: the main job on a fresh Debian 12 machine, and every test
# (what CI runs through .ci/run).
THE_TWO_COMMANDS = [
    "bash scripts/setup.sh && cmake -S . -B build -G Ninja"
    " && cmake --build build --target vxperf_cli && ./build/vxperf demo",
    "bash scripts/test.sh",
]
README_MAX_LINES = 320
# Paths in backquotes that name the project's own files, which must exist.
PATH = re.compile(r"`((?:docs|examples|scripts|bench|dashboards|tools|include|python|tests|src)"
                  r"/[\w./-]+?)`")
LINK = re.compile(r"\[[^\]]*\]\(([^)\s]+)\)")
FENCE = re.compile(r"^```[^\n]*\n(.*?)^```", re.M | re.S)
VARIABLE = re.compile(r"\bVIDEOX_PERF(?:_[A-Z0-9]+)*\b")
# Names the docs use for a variable that is not one: a placeholder, and a branch's example.
NOT_VARIABLES = {"VIDEOX_PERF_NAME", "VIDEOX_PERF_QUIET"}


def read(path):
    with open(path, encoding="utf-8") as handle:
        return handle.read()


def slug(heading):
    """GitHub's anchor of a heading: lower case, punctuation but '-' and '_' dropped, spaces to
    '-'."""
    text = re.sub(r"[`*]", "", heading.strip().lower())
    text = re.sub(r"[^\w\- ]", "", text)
    return text.replace(" ", "-")


def anchors(path):
    text = FENCE.sub("", read(path))
    return {slug(m.group(1)) for m in re.finditer(r"^#+\s+(.*)$", text, re.M)}


@pytest.mark.parametrize("page", PAGES, ids=lambda p: os.path.relpath(p, REPO))
def test_links_and_paths_exist(page):
    text = read(page)
    here = os.path.dirname(page)
    broken = []
    for target in LINK.findall(text):
        if re.match(r"[a-z]+://|mailto:", target):
            continue
        path, _, anchor = target.partition("#")
        full = os.path.normpath(os.path.join(here, path)) if path else page
        if not os.path.exists(full):
            broken.append(target)
        elif anchor and full.endswith(".md") and anchor not in anchors(full):
            broken.append(target)
    for path in PATH.findall(text):
        path = path.rstrip(".")
        if "*" in path or "<" in path:
            continue
        if not os.path.exists(os.path.join(REPO, path)):
            broken.append(path)
    assert not broken, f"{os.path.relpath(page, REPO)} names what does not exist: {broken}"


def help_text(*args):
    proc = subprocess.run([CLI, *args, "--help"], capture_output=True, text=True, check=False)
    return proc.stdout + proc.stderr


def commands():
    """Every command of vxperf: those this build lists, and those it names as left out (a build
    without LibTorch: `not in this build (they need LibTorch): inspect, demo, and calibrate's
    probe; ...`), whose --help still answers."""
    listing = help_text()
    known = set(re.findall(r"^  (\w+)\s", listing, re.M))
    left_out = re.search(r"^not in this build \(they need LibTorch\): ([^;]*);", listing, re.M)
    if left_out:
        known |= set(re.findall(r"([a-z]+)(?:,|'s probe)", left_out.group(1)))
    return known


def test_command_lines_name_real_commands_and_options():
    known = commands()
    assert {"report", "explain", "run", "replay", "trace"} <= known, known
    usages = {}
    wrong = []
    checked = 0
    for page in PAGES:
        for block in FENCE.findall(read(page)):
            for line in block.splitlines():
                # a command line: vxperf (or a path to it) where a shell command starts, after
                # any variables set for it
                for m in re.finditer(r"(?:^|&&|\|\||\||;|\$)\s*(?:[A-Z_][A-Z0-9_]*=\S*\s+)*"
                                     r"(?:[\w./-]*/)?vxperf\s+"
                                     r"([a-z][\w-]*)((?:\s+[^|;&>\n]*)?)", line):
                    command, rest = m.group(1), m.group(2)
                    checked += 1
                    if command not in known:
                        if not line.lstrip().startswith(("#", "import", "from")):
                            wrong.append(f"{os.path.basename(page)}: {line.strip()}")
                        continue
                    if command == "run":  # what follows is the program's own command line
                        rest = rest.split(" -- ")[0]
                    usage = usages.setdefault(command, help_text(command))
                    for option in re.findall(r"(?<![\w-])(--[a-z][\w-]*)", rest):
                        if option not in usage:
                            wrong.append(f"{os.path.basename(page)}: {command} {option}")
    assert not wrong, "command lines that do not run:\n" + "\n".join(wrong)
    assert checked >= 5, checked  # the README's own commands at least


def test_every_variable_named_is_read_and_every_one_read_is_documented():
    listing = subprocess.run([CLI, "env"], capture_output=True, text=True,
                             env={"PATH": os.environ.get("PATH", "")}).stdout
    read_by_engine = set(re.findall(r"^  (VIDEOX_PERF\w*)", listing, re.M))
    assert len(read_by_engine) > 20
    named = set()
    for page in PAGES:
        named |= set(VARIABLE.findall(read(page)))
    unknown = sorted(named - read_by_engine - NOT_VARIABLES)
    assert not unknown, f"the docs name variables the engine does not read: {unknown}"
    undocumented = sorted(read_by_engine - named)
    assert not undocumented, f"variables the docs never name: {undocumented}"


def test_every_record_field_is_documented():
    """Every key of every record (the TypedDicts of vxperf.records_types, held to the engine's
    field tables by test_typing.py, and the ledger's parts, kLedgerParts' rows) is named in the
    README or docs/, quoted or in backquotes."""
    types = read(os.path.join(REPO, "python", "vxperf", "records_types.py"))
    fields = set(re.findall(r"^\s+(\w+): ", types, re.M))
    assert len(fields) > 100, len(fields)
    parts = re.findall(r'\{&Ledger::\w+, "(\w+)"',
                       read(os.path.join(REPO, "include", "vxperf", "records.h")))
    fields_h = read(os.path.join(REPO, "src", "schema", "record_fields.h"))
    ledger = re.search(r"Same<R, Ledger>.*?^\}", fields_h, re.S | re.M).group(0)
    parts += re.findall(r'io\.\w+\("(\w+)"', ledger)
    assert len(parts) >= 15, parts
    fields.update(parts)
    text = "".join(read(page) for page in PAGES)
    missing = sorted(f for f in fields if not re.search(r"[`\"]" + f + r"\b|\." + f + r"\b", text))
    assert not missing, f"record fields the docs never name: {missing}"


def test_every_event_kind_is_documented():
    """Every kind of the event table (src/schema/event_kinds.h: its "ev" names; the call phases'
    own kinds are their rows' events in vxperf/phases.h) has its row in docs/EVENT_SCRIPTS.md's
    table, and that table names no other kind."""
    with open(os.path.join(REPO, "src", "schema", "event_kinds.h")) as handle:
        kinds = set(re.findall(r'\{EventKind::k\w+, "(\w+)"[,}]', handle.read()))
    assert len(kinds) >= 15, kinds
    with open(os.path.join(REPO, "include", "vxperf", "phases.h")) as handle:
        call_kinds = set(re.findall(r'PhaseSource::k(?:Call|Outside), "(\w+)"', handle.read()))
    assert len(call_kinds) >= 5, call_kinds
    documented = set()
    for line in read(os.path.join(REPO, "docs", "EVENT_SCRIPTS.md")).splitlines():
        first = re.match(r"\| ((?:`\w+`(?:, )?)+)", line)
        if first:
            documented.update(re.findall(r"`(\w+)`", first.group(1)))
    documented.discard("ev")  # the table's head
    assert kinds <= documented, sorted(kinds - documented)
    assert documented <= kinds | call_kinds, sorted(documented - kinds - call_kinds)


def test_readme_is_short():
    lines = read(README).count("\n")
    assert lines <= README_MAX_LINES, (
        f"README.md has {lines} lines: at most {README_MAX_LINES}; the depth goes to docs/")


def test_readme_links_every_docs_page():
    linked = {os.path.normpath(os.path.join(REPO, target.partition("#")[0]))
              for target in LINK.findall(read(README)) if not re.match(r"[a-z]+://", target)}
    unlinked = [os.path.relpath(page, REPO) for page in DOCS if page not in linked]
    assert not unlinked, f"README.md links no {unlinked}"


def test_readme_opens_with_the_two_commands():
    """The first lines of the README's code blocks (comments and blank lines aside) are the two
    commands, exactly; and CI runs the second."""
    lines = []
    for block in FENCE.findall(read(README)):
        lines += [line.strip() for line in block.splitlines()
                  if line.strip() and not line.strip().startswith("#")]
    assert lines[:2] == THE_TWO_COMMANDS, lines[:2]
    assert THE_TWO_COMMANDS[1] in read(os.path.join(REPO, ".ci", "run"))
