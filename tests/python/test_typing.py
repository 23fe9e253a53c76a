"""The records' TypedDicts (vxperf/records_types.py) hold to the field table: each declares exactly
the keys its struct's rows in src/schema/record_fields.h name, required where the row's rule always
writes the key; and every record the engine writes (`vxperf replay` over the conformance scripts)
or hands to Python (a sink, last_request(), in a live run) carries only declared keys, the required
ones among them, in every nested object."""
import functools
import importlib.util
import json
import os
import re
import subprocess
import typing

import pytest

from conftest import CLI, PACKAGE_DIR, REPO, clean_env, run_python

FIELD_TABLE = os.path.join(REPO, "src", "schema", "record_fields.h")
LEDGER_TABLE = os.path.join(REPO, "include", "vxperf", "records.h")
CASES = os.path.join(REPO, "tests", "conformance", "cases")


def _load_types():
    # By its path: the module imports typing alone, and the package (its engine) stays out of
    # the test process.
    path = os.path.join(PACKAGE_DIR, "vxperf", "records_types.py")
    spec = importlib.util.spec_from_file_location("vxperf_records_types", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


types = _load_types()
BY_KIND = {"request": types.RequestRecord, "train_window": types.TrainWindowRecord,
           "train_end": types.TrainEndRecord}


# ---- the field table ---------------------------------------------------------------------------

# Rules whose key is written only sometimes (record_fields.h's list of rules): not required.
OPTIONAL_RULES = {"optional", "optional_count", "optional_string", "optional_strings", "unless",
                  "flag", "dtype", "optional_dtype", "peak_source", "optional_object",
                  "optional_pair"}
# The table's structs, and the TypedDict of each as records carry it.
STRUCTS = {"DeviceReadings": "DeviceReadings", "StageSummary": "StageSummary",
           "DitThroughput": "DitThroughput", "ParallelLayout": "ParallelLayout",
           "RequestRecord": "RequestRecord", "TrainThroughput": "TrainThroughput",
           "CrossRankView": "CrossRankView", "PhaseScores": "PhaseScores",
           "OutsideSteps": "OutsideSteps",
           "TrainWindowRecord": "TrainWindowRecord", "TrainEndRecord": "TrainEndRecord"}


def _bodies(text):
    """{name: body} of the table's functions: a struct's describe() by its struct, the helpers
    (describe_head, ...) by their own names."""
    bodies = {}
    pattern = re.compile(r"^template <[^>]*?(?:Same<R, (\w+)>[^>]*)?>\s*\nvoid (\w+)\([^)]*\) \{\n"
                         r"(.*?)^\}\n", re.M | re.S)
    for struct, function, body in pattern.findall(text):
        bodies[struct or function] = body
    return bodies


def _group_spans(body):
    """Where the body's groups' fields are (io.group's lambda): written together, when the group
    is."""
    spans = []
    for match in re.finditer(r"io\.group\(.*?\{", body, re.S):
        depth, at = 1, match.end()
        while depth:
            depth += {"{": 1, "}": -1}.get(body[at], 0)
            at += 1
        spans.append((match.end(), at))
    return spans


CALL = re.compile(r'(if \([^)]*\)\s*)?\bio\.(\w+)\(\s*'
                  r'(?:(?:show|peak_memory|ledger_part)\("(\w+)"|"(\w+)"|(\w+)\(\))', re.S)


def _keys(body, bodies, shows):
    """{key: required} of one table function's body."""
    keys = {}
    groups = _group_spans(body)
    for helper in re.findall(r"\b(describe_head|describe_efficiency_basis)\(io", body):
        keys.update(_keys(bodies[helper], bodies, shows))
    for key in re.findall(r'\bdescribe_rank_of\(io, "(\w+)"', body):
        keys[key] = True  # an object: the rank and its step time
    for call in CALL.finditer(body):
        conditional, rule, shown, plain, made = call.groups()
        key = shown or plain or shows[made]
        in_group = any(start <= call.start() < end for start, end in groups)
        keys[key] = not (conditional or in_group or rule in OPTIONAL_RULES)
        if rule == "device":  # "cuda:N" and the readings, only when measured on a device
            keys[key] = False
            keys.update({k: False for k in _keys(bodies["DeviceReadings"], bodies, shows)})
    return keys


LEDGER_PART = re.compile(r'\{&Ledger::\w+, "(\w+)", "[^"]*", (?:"\w+"|nullptr),\s*'
                         r'LedgerPart::Said::(\w+)')


def ledger_parts():
    """{key: required} of kLedgerParts: a part said only where it is not 0 is optional."""
    with open(LEDGER_TABLE) as handle:
        rows = LEDGER_PART.findall(handle.read())
    assert len(rows) >= 10, "kLedgerParts' rows were not read"
    return {key: said != "kWhereNotZero" for key, said in rows}


@functools.cache
def field_table():
    """{struct: {key: required}} read from the field table, as records carry each struct."""
    with open(FIELD_TABLE) as handle:
        text = handle.read()
    shows = dict(re.findall(r'constexpr Show (\w+)\(\) \{\s*return show\("(\w+)"', text))
    bodies = _bodies(text)
    table = {struct: _keys(bodies[struct], bodies, shows) for struct in [*STRUCTS, "Ledger"]}
    # The ledger's parts are rows of their own table (kLedgerParts), which its body walks; Python
    # types the ledger as a mapping (records_types.Ledger), held to these keys by real records.
    table["Ledger"].update(ledger_parts())
    # The readings sit in a record's top level beside "device", all of them only when measured
    # on a device (io.device): none is required there.
    table["DeviceReadings"] = dict.fromkeys(["device", *table["DeviceReadings"]], False)
    return table


def declared(typed_dict):
    return set(typed_dict.__required_keys__) | set(typed_dict.__optional_keys__)


@pytest.mark.parametrize("struct", sorted(STRUCTS))
def test_each_typed_dict_declares_its_rows_of_the_field_table(struct):
    table = field_table()[struct]
    typed_dict = getattr(types, STRUCTS[struct])
    least = 2 if struct == "PhaseScores" else 4  # a phase's two scores
    assert len(table) >= least, f"the table's {struct} rows were not read"
    assert declared(typed_dict) == set(table), (sorted(set(table) - declared(typed_dict)),
                                                sorted(declared(typed_dict) - set(table)))
    assert set(typed_dict.__required_keys__) == {k for k, required in table.items() if required}


# ---- real records ------------------------------------------------------------------------------


def _nested(hint):
    """The TypedDicts a field's values are: itself, Optional[...]'s, a dict's values'."""
    if typing.is_typeddict(hint):
        return [hint]
    found = []
    for arg in typing.get_args(hint):
        found += _nested(arg)
    return found


def check_ledger(ledger, where):
    """A ledger (typed as a mapping of numbers): the table's keys only, its required ones there."""
    table = field_table()["Ledger"]
    assert set(ledger) <= set(table), (where, sorted(set(ledger) - set(table)))
    assert {k for k, required in table.items() if required} <= set(ledger), where
    assert all(isinstance(v, (int, float)) for v in ledger.values()), where


def check(record, typed_dict, where):
    """Every key of `record` declared by `typed_dict`, its required ones present, the same down
    every nested object the TypedDict types."""
    keys = set(record)
    assert keys <= declared(typed_dict), (where, sorted(keys - declared(typed_dict)))
    assert set(typed_dict.__required_keys__) <= keys, (
        where, sorted(set(typed_dict.__required_keys__) - keys))
    hints = typing.get_type_hints(typed_dict)
    for key, value in record.items():
        if key == "ledger":  # typed as a mapping: its keys are kLedgerParts' rows
            check_ledger(value, f"{where}.{key}")
        for inner in _nested(hints[key]):
            if isinstance(value, dict) and typing.get_origin(hints[key]) is dict:
                for name, item in value.items():
                    check(item, inner, f"{where}.{key}.{name}")
            elif isinstance(value, dict):
                check(value, inner, f"{where}.{key}")


def check_records(records, origin):
    kinds = set()
    for n, record in enumerate(records):
        kinds.add(record["kind"])
        check(record, BY_KIND[record["kind"]], f"{origin} record {n}")
    return kinds


def test_replayed_records_carry_only_declared_keys():
    """Every conformance script replayed: what `vxperf report` and the trackers read."""
    records = []
    for name in sorted(os.listdir(CASES)):
        if name.endswith(".events.jsonl"):
            out = subprocess.run([CLI, "replay", os.path.join(CASES, name)], capture_output=True,
                                 text=True, timeout=60)
            records += [json.loads(line) for line in out.stdout.splitlines() if line.strip()]
    assert len(records) > 100
    assert check_records(records, "replayed") == {"request", "train_window", "train_end"}
    assert any("device" in r for r in records) and any(r.get("dit") for r in records)
    assert any(r.get("throughput", {}) and "mfu" in r["throughput"] for r in records)


LIVE = """
    import json, os, torch, vxperf
    import tiny_models as tm
    got = []
    vxperf.add_sink(got.append)
    pipe = vxperf.instrument_pipeline(tm.wan_pipeline())
    pipe("a cat", steps=2)
    last = vxperf.last_request()
    with vxperf.request(videos=2, queue_s=0.5, frames=16, fps=8):
        with vxperf.stage("text_encoder"):
            pass
    def outside(step):
        if step == 1:
            with vxperf.checkpoint("save", bytes=1000, path=os.environ["CHECKPOINT"]):
                pass
            with vxperf.evaluation():
                pass

    tm.train_dit(4, after_step=outside)
    vxperf.finish()
    print(json.dumps({"sink": got, "last": last}))
"""


def test_records_handed_to_python_carry_only_declared_keys(tmp_path):
    """A sink's records and last_request() in a live run: inference, then a training loop with a
    checkpoint and an evaluation (its windows' "outside" and "ledger")."""
    proc = run_python(LIVE, env=clean_env(VIDEOX_PERF="1", VIDEOX_PERF_EVERY="2",
                                          CHECKPOINT=tmp_path / "ckpt"))
    out = json.loads(proc.stdout.splitlines()[-1])
    records = out["sink"]
    assert [r["kind"] for r in records] == ["request", "request", "train_window", "train_window",
                                            "train_end"]
    assert check_records(records, "handed over") == {"request", "train_window", "train_end"}
    check(out["last"], types.RequestRecord, "last_request()")
    assert out["last"] == records[0]
    windows = [r for r in records if r["kind"] == "train_window"]
    assert any("outside" in w for w in windows) and all("ledger" in w for w in windows)
    assert records[-1]["ledger"]["steps"] == windows[-1]["ledger"]["steps"]
    assert records[1]["videos"] == 2 and records[1]["queue_s"] == 0.5
