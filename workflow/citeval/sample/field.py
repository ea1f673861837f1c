"""Field-level sampling: per field, queries labelled with it, and pools of every paper they
cite plus random negatives from the field-cited set."""

from __future__ import annotations

import logging
from collections.abc import Sequence

import pyarrow as pa
import pyarrow.compute as pc

from citeval.collection_list import field_slugs
from citeval.draws import SizeGuard, build_pool, seeded_rng
from citeval.errors import ConfigError
from citeval.sample.citations import CitationData
from citeval.sample.collection import SPLITS, Collection, draw_disjoint_queries, qrels_for

log = logging.getLogger(__name__)


def sample_field_level(
    data: CitationData,
    *,
    seed: int,
    fields: Sequence[str],
    queries_per_field: dict[str, int],
    pool_size: int,
    repetitions: int,
    guard: SizeGuard,
) -> dict[str, list[Collection]]:
    slugs = field_slugs(fields, "sampling.field_level.fields")
    eligible = {name: data.eligible_queries(name) for name in fields}
    drawn: set[str] = set()

    def draw(split: str, name: str) -> list[str]:
        """The field's queries of ``split``, none drawn before for any field or split."""
        taken = pa.array(sorted(drawn), pa.string())
        available = eligible[name].filter(pc.invert(pc.is_in(eligible[name], value_set=taken)))
        rng = seeded_rng(seed, "field", f"{split}-queries", name)
        counts = {other: 0 for other in SPLITS} | {split: queries_per_field[split]}
        queries = draw_disjoint_queries(rng, available, counts, guard, f"field-level '{name}'")[
            split
        ]
        drawn.update(queries)
        return queries

    # Test draws first, field by field in the configured order, then validation: a paper
    # labelled with two fields is a query of one of them only (MDCR lists a query under one
    # field), and no validation query is a test query anywhere.
    test_queries = {name: draw("test", name) for name in fields}
    valid_queries = {name: draw("valid", name) for name in fields}

    collections: dict[str, list[Collection]] = {split: [] for split in SPLITS}
    for slug, name in slugs.items():
        field_cited = data.field_cited_set(name)
        if len(field_cited) == 0:
            # Not a shortfall to cap: a field no corpus paper carries is most likely a typo.
            raise ConfigError(
                f"sampling.field_level.fields: no candidate is cited by a paper of field "
                f"{name!r}; is it spelled as in the corpus's fields?"
            )
        for split, per_split in (("test", test_queries), ("valid", valid_queries)):
            if not queries_per_field[split]:
                continue
            queries_of_split = per_split[name]
            references = data.references(queries_of_split)
            positives = {cited for cited_ids in references.values() for cited in cited_ids}
            size = max(pool_size, len(positives))
            reps = repetitions if split == "test" else 1
            if len(field_cited) <= pool_size:
                # Every repetition's pool is then the same whole set; the repetitions
                # still exist, so that the collections follow from the config alone.
                log.info(
                    "field '%s': the field-cited set holds %d papers (pool size %d): "
                    "every pool is the whole set",
                    name,
                    len(field_cited),
                    pool_size,
                )
            for rep in range(reps):
                rng = seeded_rng(seed, "field", split, slug, rep)
                pool = build_pool(rng, positives, field_cited, set(queries_of_split), size)
                collections[split].append(
                    Collection(
                        slug,
                        rep,
                        queries_of_split,
                        pool,
                        qrels_for(queries_of_split, references),
                        pool_size,
                    )
                )
    return collections
