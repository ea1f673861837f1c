"""What a config runs: every system, collection, split and output, decided before any job
(docs/architecture.md)."""

from citeval.plan.patterns import alternatives
from citeval.plan.plan import Plan
from citeval.plan.rerank import Tradeoff, TradeoffRow

__all__ = ["Plan", "Tradeoff", "TradeoffRow", "alternatives"]
