"""The synthetic corpus's shape: fields, their sizes and relations, rates and densities.

Changing any value here changes the corpus generated for a given seed.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from citeval.errors import ConfigError

#: The 19 MAG fields of study, in the order the paper lists them.
FIELDS: tuple[str, ...] = (
    "Art",
    "Biology",
    "Business",
    "Chemistry",
    "Computer Science",
    "Economics",
    "Engineering",
    "Environmental Science",
    "Geography",
    "Geology",
    "History",
    "Materials Science",
    "Mathematics",
    "Medicine",
    "Philosophy",
    "Physics",
    "Political Science",
    "Psychology",
    "Sociology",
)

# Share of papers per primary field, roughly S2ORC's: medicine, biology and CS dominate,
# art, history and philosophy are small (the three fields the paper samples only once).
FIELD_WEIGHTS: dict[str, float] = {
    "Art": 0.010,
    "Biology": 0.130,
    "Business": 0.025,
    "Chemistry": 0.070,
    "Computer Science": 0.110,
    "Economics": 0.030,
    "Engineering": 0.055,
    "Environmental Science": 0.035,
    "Geography": 0.018,
    "Geology": 0.020,
    "History": 0.012,
    "Materials Science": 0.050,
    "Mathematics": 0.045,
    "Medicine": 0.200,
    "Philosophy": 0.012,
    "Physics": 0.070,
    "Political Science": 0.025,
    "Psychology": 0.050,
    "Sociology": 0.025,
}

# Fields that share papers (second labels) and cross-field citations.
RELATED_FIELDS: dict[str, tuple[str, ...]] = {
    "Art": ("History", "Philosophy", "Sociology"),
    "Biology": ("Medicine", "Chemistry", "Environmental Science"),
    "Business": ("Economics", "Sociology", "Computer Science"),
    "Chemistry": ("Materials Science", "Biology", "Physics"),
    "Computer Science": ("Mathematics", "Engineering", "Physics"),
    "Economics": ("Business", "Political Science", "Mathematics"),
    "Engineering": ("Computer Science", "Materials Science", "Physics"),
    "Environmental Science": ("Biology", "Geology", "Geography", "Chemistry"),
    "Geography": ("Environmental Science", "Geology", "Sociology"),
    "Geology": ("Geography", "Environmental Science", "Physics"),
    "History": ("Political Science", "Art", "Sociology", "Philosophy"),
    "Materials Science": ("Chemistry", "Physics", "Engineering"),
    "Mathematics": ("Computer Science", "Physics", "Economics"),
    "Medicine": ("Biology", "Psychology", "Chemistry"),
    "Philosophy": ("Psychology", "History", "Political Science"),
    "Physics": ("Mathematics", "Materials Science", "Chemistry"),
    "Political Science": ("Economics", "Sociology", "History"),
    "Psychology": ("Medicine", "Sociology", "Philosophy"),
    "Sociology": ("Political Science", "Psychology", "Economics"),
}


def related_fields_table() -> tuple[np.ndarray, np.ndarray]:
    """Each field's related fields as indexes into ``FIELDS`` (rows padded with -1), and
    how many each field has: the lookup both the papers' second fields and the
    cross-field citations draw from."""
    width = max(len(names) for names in RELATED_FIELDS.values())
    related = np.full((len(FIELDS), width), -1, dtype=np.int64)
    n_related = np.zeros(len(FIELDS), dtype=np.int64)
    for i, name in enumerate(FIELDS):
        indexes = [FIELDS.index(r) for r in RELATED_FIELDS[name]]
        related[i, : len(indexes)] = indexes
        n_related[i] = len(indexes)
    return related, n_related


# Rates and sizes.
TEXT_BLOCK = 1024  # papers per text RNG stream; fixed so records ignore the shard count
GRAPH_CHUNK = 1 << 16  # citing papers per vectorised citation batch
LAST_YEAR_SHARE = 0.09  # share of papers in the last year (the query year)
SECOND_FIELD_RATE = 0.12
NULL_FIELDS_RATE = 0.02  # mag_field_of_study null
NULL_YEAR_RATE = 0.02
NULL_TITLE_RATE = 0.01
EMPTY_TITLE_RATE = 0.01
NULL_ABSTRACT_RATE = 0.13
SHORT_ABSTRACT_RATE = 0.02
SUBTOPICS_PER_TOPIC = 6
SUBTOPIC_WORDS = 12
TOPIC_WORDS = 30
FIELD_PSEUDO_WORDS = 40
FITNESS_ALPHA = 1.5  # Pareto exponent of a paper's citation attractiveness
OBSCURE_RATE = 0.3  # papers whose attractiveness is scaled by OBSCURE_FITNESS
OBSCURE_FITNESS = 0.03
# Where a reference goes: same subtopic, same topic, same field, another field.
CITATION_LEVELS = (0.55, 0.22, 0.13, 0.10)
SAME_YEAR_RATE = 0.15
# The last year stands for the snapshot's newest papers, which in S2ORC are also cited by
# papers after it. Without more same-year citations too few of them would pass the
# "cited at least 3 times" prefilter to serve as queries.
LAST_YEAR_SAME_RATE = 0.35
FUTURE_YEAR_RATE = 0.02  # S2ORC has some citations to "later" papers (preprints)
MEAN_LAG = 4.0  # mean years between a citing paper and an older cited paper


@dataclass(frozen=True)
class Density:
    """How much each record carries.

    The default is the demo's and the tests': enough references that most papers pass
    the citation prefilter at small sizes, which is denser than S2ORC.
    ``DENSITIES["s2orc-v2020"]`` matches the real corpus per paper, for ingestion
    benchmarks that should say what a run on S2ORC costs.
    """

    # Factor on the intended references per paper (before clipping to 1..60).
    references: float = 1.0
    null_abstract_rate: float = NULL_ABSTRACT_RATE

    def __post_init__(self) -> None:
        if not self.references > 0:
            raise ConfigError(f"Density.references must be > 0, got {self.references}")
        if not 0 <= self.null_abstract_rate <= 1 - SHORT_ABSTRACT_RATE:
            raise ConfigError(
                f"Density.null_abstract_rate must be in [0, {1 - SHORT_ABSTRACT_RATE}], "
                f"got {self.null_abstract_rate}"
            )


DENSITIES = {
    "default": Density(),
    # S2ORC v2020 links 380.5M citations among 81.1M papers (Lo et al., 2020): 4.69 per
    # paper, against 12.6 in the default corpus; 0.35 gives 4.6 at 2M papers. About half
    # of its abstracts are missing (512 of the 1,000 records of ../shared's real sample).
    "s2orc-v2020": Density(references=0.35, null_abstract_rate=0.51),
}
