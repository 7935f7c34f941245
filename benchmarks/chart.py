"""The bar chart of a results file's ratios (matplotlib, the ``bench`` extra).

One group of bars per workload, one bar per pair (summary.PAIRS), on a log scale around 1: a bar
below the line is a workload where jitgrad is faster than that peer, and 0.5 and 2 are the same
distance from it. The machine and the load it was under go in the title, since ratios taken on a
loaded 2-core machine are not those of an idle one.
"""
from __future__ import annotations


def available() -> bool:
    try:
        import matplotlib  # noqa: F401
    except ImportError:
        return False
    return True


def draw(doc: dict, path: str) -> None:
    """Write the PNG of ``doc``'s ratios to ``path``."""
    import matplotlib
    matplotlib.use("Agg")   # files only: no display is needed or wanted
    import matplotlib.pyplot as plt
    from matplotlib.ticker import FuncFormatter, LogLocator

    measured = [w for w in doc["workloads"] if w.get("ratios")]
    names = [p["name"] for p in doc["pairs"] if any(r["name"] == p["name"] for w in measured for r in w["ratios"])]
    width = 0.8 / max(len(names), 1)
    fig, ax = plt.subplots(figsize=(max(6.0, 1.6 * len(measured) + 2), 4.8), layout="constrained")
    for i, name in enumerate(names):
        xs, values = [], []
        for k, workload in enumerate(measured):
            value = next((r["ratio"] for r in workload["ratios"] if r["name"] == name), None)
            if value is not None:
                xs.append(k - 0.4 + width * (i + 0.5))
                values.append(value)
        # Bars grow from 1, up for a slower jitgrad and down for a faster one.
        bars = ax.bar(xs, [v - 1.0 for v in values], width, bottom=1.0, label=name)
        ax.bar_label(bars, labels=[f"{v:.2g}" for v in values], fontsize=6, padding=1)
    ax.axhline(1.0, color="black", linewidth=0.8)
    ax.set_yscale("log")
    as_ratio = FuncFormatter(lambda value, _: f"{value:g}x")
    ax.yaxis.set_major_formatter(as_ratio)
    ax.yaxis.set_minor_locator(LogLocator(base=10, subs=(2.0, 5.0)))   # 0.2x, 0.5x, 2x, 5x: no crowding
    ax.yaxis.set_minor_formatter(as_ratio)
    ax.tick_params(axis="y", which="both", labelsize=7)
    ax.set_xticks(range(len(measured)), [f"{w['key']}\n{w['title']}" for w in measured], fontsize=8)
    ax.set_ylabel("jitgrad time / peer time (below 1: jitgrad faster)", fontsize=9)
    if names:
        ax.legend(fontsize=7, loc="upper left", bbox_to_anchor=(1.0, 1.0))
    skipped = [f"{w['key']}: {w['skipped']}" for w in doc["workloads"] if "skipped" in w]
    machine = doc["machine"]
    load = machine.get("load average (1, 5, 15 min)", {}).get("start")
    title = (f"{doc['date']}, {doc['settings']['mode']} run; {machine.get('cpu', '?')}"
             + (f"; load average {load[0]:.1f}" if load else ""))
    ax.set_title(title + ("\nskipped " + "; ".join(skipped) if skipped else ""), fontsize=8)
    fig.savefig(path, dpi=120)
    plt.close(fig)
