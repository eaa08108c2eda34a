"""The bundled catalog as a user meets it: valid, evaluable everywhere, every number sourced."""

from __future__ import annotations

import pytest

from sparkadvisor.cli import main
from sparkadvisor.core.advisor import advise
from sparkadvisor.core.catalog import iter_tables, source_ids
from sparkadvisor.core.explain import explain
from sparkadvisor.core.memory import LAYER_SPLIT_SOURCES
from sparkadvisor.core.plan import Cluster
from sparkadvisor.core.records import field_names
from sparkadvisor.core.workload import WORKLOADS


def test_check_passes_on_the_bundled_catalog(capsys):
    assert main(["check"]) == 0
    assert ": ok (" in capsys.readouterr().out


@pytest.mark.parametrize("nodes", [1, 2, 4])
@pytest.mark.parametrize("workload", sorted(WORKLOADS))
def test_every_build_evaluates_on_every_hardware(index, nodes, workload):
    for hardware in index.catalog.hardware:
        ranked = advise(index, Cluster(hardware, nodes), WORKLOADS[workload])
        assert len(ranked) == len(index.catalog.builds), hardware.id
        for item in ranked:
            assert explain(item.plan), (hardware.id, item.plan.build.id)


def _has_numbers(table) -> bool:
    return any(isinstance(getattr(table, name), (int, float)) and not isinstance(getattr(table, name), bool)
               for name in field_names(type(table)))


def test_every_table_with_numbers_names_a_source(index):
    catalog = index.catalog
    unsourced = [path for path, table in iter_tables(catalog)
                 if _has_numbers(table) and path and not ("source" in field_names(type(table)) and table.source)]
    assert unsourced == []


def test_every_source_resolves_and_opens(index):
    catalog = index.catalog
    cited = {sid for _, table in iter_tables(catalog) for field in ("source", "reference_source")
             if field in field_names(type(table)) and getattr(table, field) is not None
             for sid in source_ids(getattr(table, field))}
    cited |= set(LAYER_SPLIT_SOURCES)  # the sources of a rule the code applies (memory.LAYER_SPLIT_ENGINES)
    assert cited - set(catalog.sources) == set()
    no_url = [sid for sid, source in catalog.sources.items() if not source.url and source.kind != "article"]
    assert no_url == []
    assert set(catalog.sources) - cited == set(), "sources nobody cites"


def test_a_build_that_fits_one_spark_fits_two_and_four(index):
    spark, agentic = index.hardware["dgx-spark"], WORKLOADS["agentic"]
    fits = {n: {r.plan.build.id for r in advise(index, Cluster(spark, n), agentic) if r.plan.fits} for n in (1, 2, 4)}
    assert fits[1] - fits[2] == set()
    assert fits[1] - fits[4] == set()
