"""Each list of names the app keeps is defined once; where a type must spell it out, a test keeps them equal."""

from __future__ import annotations

import typing

from sparkadvisor.cli import COMMANDS
from sparkadvisor.cliparser import build_parser
from sparkadvisor.core import schema
from sparkadvisor.core.caveats import KINDS
from sparkadvisor.core.formats import FORMATS
from sparkadvisor.core.table import COLUMNS, row_cells
from sparkadvisor.core.workload import WORKLOADS, WorkloadKind
from sparkadvisor.export import FORMATS as EXPORT_FORMATS


def test_weight_formats_the_schema_accepts_are_the_ones_with_bits():
    assert set(typing.get_args(schema.Format)) == set(FORMATS)


def test_caveat_kinds_the_schema_accepts_are_the_ones_with_badges():
    assert set(typing.get_args(schema.CaveatKind)) == set(KINDS)


def test_workload_kinds_are_the_workloads():
    assert schema.WorkloadKind is WorkloadKind
    assert set(typing.get_args(WorkloadKind)) == set(WORKLOADS)


def test_export_formats_the_cli_offers_are_the_exporters():
    parser = build_parser(only="export")
    sub = next(a for a in parser._actions if a.dest == "command")
    fmt = next(a for a in sub.choices["export"]._actions if a.dest == "fmt")
    assert list(fmt.choices) == list(EXPORT_FORMATS)


def test_every_table_column_has_a_cell_and_a_unique_key(index):
    from sparkadvisor.core.advisor import advise
    from sparkadvisor.core.plan import Cluster

    keys = [c.key for c in COLUMNS]
    assert len(keys) == len(set(keys))
    ranked = advise(index, Cluster(index.hardware["dgx-spark"], 2), WORKLOADS["agentic"])
    assert set(row_cells(ranked[0])) == set(keys)


def test_every_subcommand_module_has_arguments_and_a_runner():
    from sparkadvisor.cli import command_module

    for name in COMMANDS:
        module = command_module(name)
        assert callable(module.add_arguments) and callable(module.run), name
