"""The one compiled piece of citeval: the v2020 decoder that speeds up ingest's parse.

Everything else is declared in pyproject.toml. The extension is optional: where it cannot
be built (no C compiler or Python headers), citeval installs without it and ingest decodes
every chunk with msgspec, with the same results, about twice as slowly.
"""

from setuptools import Extension, setup

setup(
    ext_modules=[
        Extension(
            "citeval._v2020",
            sources=["workflow/citeval/_v2020.c"],
            extra_compile_args=["-O3"],
            optional=True,
        )
    ]
)
