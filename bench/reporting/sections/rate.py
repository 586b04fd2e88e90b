"""What the rate term costs: a quantized model trained for its rate (``FRAEConfig.rate_weight``,
the contract's "Rate: training the codec for its bits", ``--rate-weight``:
``bench.grid.with_rated``) beside the same model without it, at its training operations at the
targets' shape: each variant's µs per step with the rate term over its µs per step without."""

from __future__ import annotations

from typing import Any

from bench.comparing.pairs import Spread, partner_spread
from bench.records import Key
from bench.reporting.analysis import Pivot, label
from bench.reporting.render import Brief, Section
from bench.reporting.sections import Report
from bench.reporting.tables import Rows, figure_cell

HEADER = ["variant", "operation", "without µs/step", "with µs/step", "with / without"]
HEADER += ["measured"]
IN_TURN, APART = "in turn", "apart"
CAPTION = (
    "The quantized model trained for its rate (λ in its label: the loss adds λ times its "
    "code's bits a frame under a learned prior, whose location and log-scale train with the "
    "weights) beside the same model without the rate term, holding the same weights, in the "
    "same process: µs per step, median, with its spread (the lower to the upper quartile of "
    "the calls, widened to each round's median), and with / without. *In turn*: a call of "
    "each in every sample, the order reversed every other one, the ratio the median of each "
    "sample's, with its spread. *Apart*: each its own measurement, one after the other (a "
    "file from before the calls in turn, a first call too long to repeat, a model without the "
    "rate term that could not be made), the ratio's spread taking in both figures' (from the "
    "lower with over the upper without to the upper with over the lower without)."
)


def unrated(config: dict[str, Any]) -> dict[str, Any]:
    """A model's recorded config without its rate weight."""
    return {**config, "rate_weight": None}


def pairs(report: Report) -> list[tuple[str, str]]:
    """(without, with) for each model of the run trained for its rate whose config without
    its rate weight the run measured too."""
    configs = report.run.models
    found = []
    for rated in [model for model in configs if report.is_rated(model)]:
        same = unrated(configs[rated])
        base = next((m for m in configs if m != rated and unrated(configs[m]) == same), None)
        if base is not None and not report.is_rated(base):
            found.append((base, rated))
    return found


def rate_rows(report: Report) -> Rows:
    """Each measurement of a model trained for its rate beside the same measurement of the
    model without it (``pairs``)."""
    rows = []
    found = pairs(report)
    for base, rated in found:
        without, with_rate = Pivot.of(report.records, base), Pivot.of(report.records, rated)
        for key in with_rate.results:
            before, after, ratio, how = beside(without, with_rate, key)
            named = key.variant if len(found) == 1 else f"{key.variant} ({rated})"
            shown = f"{label(key.operation, key.side, key.chunk)} B={key.batch} T={key.steps}"
            cells = [figure_cell(before), figure_cell(after), figure_cell(ratio, "×"), how]
            rows.append([named, shown, *cells])
    return rows


def beside(
    without: Pivot, with_rate: Pivot, key: Key
) -> tuple[Spread | None, Spread | None, Spread | None, str]:
    """µs per step without and with the rate term at ``key`` (``with_rate``'s) and their
    ratio, each with its spread, and how they were measured: in turn, from the calls of the
    model without (``without``'s) its record keeps beside its own
    (``bench.measuring.timing.Beside``), or else apart, each its own measurement."""
    after = with_rate.spread_or_median(key)
    rounds = with_rate.rounds.get(key, [])
    if (ratio := with_rate.in_turn(key, without.model)) is not None:
        return partner_spread(rounds, without.model), after, ratio, IN_TURN
    other = without.key(key.variant, key.operation, key.shape, key.side, key.chunk)
    before = without.spread_or_median(other)
    ratio = None if before is None or after is None else after.over_apart(before)
    return before, after, ratio, APART


def untimed(report: Report) -> list[str]:
    """A line for each measurement of a model trained for its rate that was not timed,
    with why."""
    lines = []
    for _, rated in pairs(report):
        for key, result in Pivot.of(report.records, rated).results.items():
            if result.median_s is None:
                why = result.error or result.unsupported or "not timed"
                lines.append(f"- `{key.variant}`, {label(key.operation)}: {why}")
    return lines


def sections(report: Report) -> list[Section]:
    """What the rate term costs, where the run trained a model for its rate beside the same
    model without it, and which variants could not train it."""
    if not (rows := rate_rows(report)):
        return []
    variants = report.run.variants.items()
    refused = [f"- `{name}`: {v.no_rate_weight}" for name, v in variants if v.no_rate_weight]
    text = "Not trained for the rate:\n\n" + "\n".join(refused) if refused else ""
    if failed := untimed(report):
        text += ("\n\n" if text else "") + "Not timed:\n\n" + "\n".join(failed)
    brief = Brief(caption="what the rate term costs: µs per step, without and with it")
    title = f"What the rate term costs ({', '.join(rated for _, rated in pairs(report))})"
    return [Section(title, CAPTION, HEADER, rows, text, brief)]
