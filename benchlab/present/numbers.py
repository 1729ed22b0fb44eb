"""Numbers for people, in one place: the terminal, the notebooks, the charts and the report format them here.

Requests/s get three significant figures (``9.02k``), latencies milliseconds (``12.3 ms``), an interval
is printed to the precision its own width allows (``9.0k [8.8k, 9.2k]``: a digit finer than the interval
is noise), a ratio to the hundredth (``0.83``), a share of a core in cores (``1.79 cores``), and a sentence
as text (:class:`Note`). :mod:`benchlab.present.formatting` turns the statistics' frames into frames of these.

>>> rate(9021.4), ms(0.012345), interval(9021.4, 8812.0, 9234.0)
('9.02k', '12.3 ms', '9.0k [8.8k, 9.2k]')
"""

from __future__ import annotations

import math
from collections.abc import Callable

#: Suffixes of large counts: 9,021 is 9.02k.
_SUFFIXES = ((1e9, "G"), (1e6, "M"), (1e3, "k"))
MISSING = "-"


def _number(value) -> float | None:
    try:
        number = float(value)
    except (TypeError, ValueError):
        return None
    return None if math.isnan(number) or math.isinf(number) else number


def _place(value: float, figures: int) -> int:
    """The decimal place of the last of ``figures`` significant figures of ``value`` (0: units, -2: hundredths)."""
    return math.floor(math.log10(abs(value))) - figures + 1 if value else 0


def _rounded_place(value: float, figures: int) -> int:
    """:func:`_place` of ``value`` once rounded: 999.6 to 3 figures is 1,000, whose last figure is the tens."""
    place = _place(value, figures)
    rounded = round(value, -place)
    return _place(rounded, figures) if rounded else place


def _scaled(value: float, place: int, scale: float, suffix: str) -> str:
    decimals = max(0, round(math.log10(scale)) - place)
    text = f"{round(value, -place) / scale:,.{decimals}f}"
    return f"{'0' if text.strip('-0.,') == '' else text}{suffix}"


def _scale(value: float) -> tuple[float, str]:
    return next(((s, x) for s, x in _SUFFIXES if abs(value) >= s * 0.9995), (1.0, ""))


def rate(value, figures: int = 3) -> str:
    """Requests (or anything counted) per second, to ``figures`` significant figures, with k, M, G.

    >>> rate(9021.4), rate(18_112), rate(312.4), rate(12.345), rate(1_500_000), rate(999.6), rate(None)
    ('9.02k', '18.1k', '312', '12.3', '1.50M', '1.00k', '-')
    """
    number = _number(value)
    if number is None:
        return MISSING
    place = _rounded_place(number, figures)
    scale, suffix = _scale(round(number, -place))
    return _scaled(number, place, scale, suffix)


def ms(seconds, figures: int = 3, *, unit: bool = True) -> str:
    """A latency in seconds, shown in milliseconds to ``figures`` significant figures.

    >>> ms(0.012345), ms(0.000853), ms(0.3162), ms(1.2345), ms(None)
    ('12.3 ms', '0.853 ms', '316 ms', '1,230 ms', '-')
    """
    number = _number(seconds)
    if number is None:
        return MISSING
    text = _scaled(number * 1000.0, _rounded_place(number * 1000.0, figures), 1.0, "")
    return f"{text} ms" if unit else text


def percent(value, decimals: int = 1) -> str:
    """A fraction as a percentage: ``0.0213`` is ``2.1%``.

    >>> percent(0.0213), percent(None)
    ('2.1%', '-')
    """
    number = _number(value)
    return MISSING if number is None else f"{number:.{decimals}%}"


def cores(value) -> str:
    """A share of one core (1.0 is one busy core) as cores, to the hundredth: a JVM's two compiler threads can
    take more than one, which a percentage of "one core" hides (179%).

    >>> cores(1.794), cores(0.004), cores(None)
    ('1.79 cores', '0.00 cores', '-')
    """
    number = _number(value)
    return MISSING if number is None else f"{number:.2f} cores"


def ratio(value) -> str:
    """A ratio to the hundredth, whatever its size: one rounding rule for every ratio of a column.

    >>> ratio(0.828), ratio(3.5), ratio(None)
    ('0.83', '3.50', '-')
    """
    number = _number(value)
    return MISSING if number is None else f"{number:,.2f}"


class Note(str):
    """A sentence a notebook shows as text, not as a quoted Python string (a cell's last value that is a ``str`` is
    shown as its repr); it is still the ``str`` it says.

    >>> Note("no flags"), Note("no flags") == "no flags"
    (no flags, True)
    """

    def __repr__(self) -> str:
        return str(self)

    def _repr_pretty_(self, printer, cycle) -> None:
        printer.text(str(self))

    def _repr_markdown_(self) -> str:
        return f"*{self}*"


def change(ratio) -> str:
    """A ratio as a signed change: ``1.12`` is ``+12%``, ``0.95`` is ``-5%``.

    >>> change(1.12), change(0.95)
    ('+12%', '-5%')
    """
    number = _number(ratio)
    return MISSING if number is None else f"{number - 1:+.0%}"


#: The kinds of :func:`interval` that show a figure in another unit than it is kept in: the factor and the unit.
UNITS = {"ms": (1e3, " ms"), "us": (1e6, " µs"), "MiB": (1 / 2**20, " MiB")}


def interval(mean, low, high, *, kind: str = "rate") -> str:
    """A mean and its interval, each to the precision the interval's width allows (at least 2 figures).

    ``kind`` is ``"rate"`` (requests/s, with k and M), ``"ms"`` (a latency in seconds, shown in ms), ``"us"``
    (CPU seconds per request, shown in microseconds), ``"MiB"`` (bytes, shown in MiB), ``"ratio"`` (plain,
    ``1.05 [0.98, 1.12]``) or ``"change"`` (a ratio as ``+5% [-2%, +12%]``).

    >>> interval(9021.4, 8812.0, 9234.0), interval(0.0123, 0.0119, 0.0128, kind="ms")
    ('9.0k [8.8k, 9.2k]', '12.3 [11.9, 12.8] ms')
    >>> interval(1.052, 0.981, 1.121, kind="ratio"), interval(1.052, 0.981, 1.121, kind="change")
    ('1.05 [0.98, 1.12]', '+5% [-2%, +12%]')
    >>> interval(3.5, 0.35, 35.12, kind="ratio"), interval(0.828, None, None, kind="ratio")
    ('3.50 [0.35, 35.12]', '0.83')
    >>> interval(9021.4, None, None), interval(1800, 100, 35_400)
    ('9.02k', '1.8k [100, 35k]')
    >>> interval(3.21e-5, 3.1e-5, 3.3e-5, kind="us"), interval(201_326_592, None, None, kind="MiB")
    ('32 [31, 33] µs', '192 MiB')
    """
    number, lo, hi = _number(mean), _number(low), _number(high)
    if number is None:
        return MISSING
    if kind == "ratio":  # to the hundredth, every one: a column of ratios is read down, one rule for all
        return ratio(number) + (f" [{ratio(lo)}, {ratio(hi)}]" if lo is not None and hi is not None else "")
    if kind == "change":
        return change(number) + (f" [{change(lo)}, {change(hi)}]" if lo is not None and hi is not None else "")
    factor, unit = UNITS.get(kind, (1.0, ""))
    number = number * factor
    scale, suffix = _scale(number) if kind == "rate" else (1.0, "")
    if lo is None or hi is None:
        if kind == "rate":
            return rate(mean)
        return _scaled(number, _rounded_place(number, 3), 1.0, "") + unit
    lo, hi = lo * factor, hi * factor
    if lo <= 0 or hi > 10 * lo:
        # An interval over a factor of ten says only the order of magnitude: 2 figures each, no common place.
        show: Callable[[float], str] = lambda v: _scaled(v, _rounded_place(v, 2) if v else 0,  # noqa: E731
                                                         *(_scale(v) if kind == "rate" else (1.0, "")))
    else:
        # Round to the first significant digit of the half-width: finer digits are within the noise.
        width = (hi - lo) / 2
        place = min(_place(width, 1) if width > 0 else _place(number, 3), _place(number, 2))
        show = lambda v: _scaled(v, place, scale, suffix)  # noqa: E731
    return f"{show(number)} [{show(lo)}, {show(hi)}]" + unit
