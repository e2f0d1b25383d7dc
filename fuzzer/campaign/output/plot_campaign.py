"""Draws a campaign's plot_data as campaign.png and campaign.svg (run by `tcfuzz plot`; trusted).

    python plot_campaign.py OUT DEST

OUT is a campaign directory (OUT/plot_data, written by CampaignOutput::appendPlot) or a merged night
(OUT/shards.json beside OUT/shards/<name>/plot_data, one campaign per shard). DEST receives
campaign.png and campaign.svg. Panels over run time: programs judged, speed, features, queue, findings,
unique bugs. A night draws one line per shard in each panel; a plot_data with per-GPU columns
(gpu<N>_<column>, e.g. gpu0_programs) draws one line per GPU beside the total in that column's panel.
Run time is summed over sessions: a resumed campaign's run_time_s starts again at 0.

It reads only plot_data and shards.json; it runs nothing. Exit codes: 0 drawn; 2 the input cannot be
drawn (no plot_data, no rows yet, a malformed row or shards.json), with one line on stderr saying why;
3 matplotlib is missing or rendering failed. The same input gives byte-identical files.
"""

import json
import os
import re
import sys

# The columns CampaignOutput::appendPlot writes, in its order (used when a file has no header line).
DEFAULT_COLUMNS = ["unix_time", "run_time_s", "programs", "programs_per_min", "queue", "features", "findings",
                   "unique_signatures", "torch_share"]
# (column, panel title, y label): the panels, in reading order.
PANELS = [
    ("programs", "Programs judged", "programs"),
    ("programs_per_min", "Speed", "programs / min"),
    ("features", "Compiler features", "features"),
    ("queue", "Queue", "interesting programs"),
    ("findings", "Findings", "raw findings"),
    ("unique_signatures", "Unique bugs", "unique signatures"),
]
PER_GPU = re.compile(r"^gpu(\d+)_(.+)$")


class InputError(Exception):
    """The input cannot be drawn; the message says why (exit 2)."""


def read_plot_data(path):
    """The columns of one plot_data as {name: [float, ...]}, with run time summed over sessions."""
    if not os.path.isfile(path):
        raise InputError(f"{path}: no such file (a campaign writes it once its first status line is due)")
    header = None
    rows = []
    with open(path, encoding="utf-8", errors="replace") as f:
        for number, line in enumerate(f, 1):
            text = line.strip()
            if not text:
                continue
            if text.startswith("#"):
                names = [n.strip() for n in text[1:].split(",")]
                if header is None or names != header:
                    if rows:
                        raise InputError(f"{path} line {number}: a header after data rows names other columns")
                    header = names
                continue
            rows.append((number, text))
    columns = header or DEFAULT_COLUMNS
    for needed in ["run_time_s"] + [p[0] for p in PANELS]:
        if needed not in columns:
            raise InputError(f"{path}: the header names no '{needed}' column")
    if not rows:
        raise InputError(f"{path}: no rows yet (the campaign has not written a status line)")
    data = {name: [] for name in columns}
    for number, text in rows:
        fields = [x.strip() for x in text.split(",")]
        if len(fields) != len(columns):
            raise InputError(f"{path} line {number}: {len(fields)} fields where the header names {len(columns)}: "
                             f"'{text[:80]}'")
        for name, field in zip(columns, fields):
            try:
                value = float(field)
            except ValueError:
                raise InputError(f"{path} line {number}: '{field[:40]}' in column {name} is not a number") from None
            if value != value or value in (float("inf"), float("-inf")):
                raise InputError(f"{path} line {number}: '{field[:40]}' in column {name} is not a finite number")
            data[name].append(value)
    elapsed, offset, last = [], 0.0, None
    for t in data["run_time_s"]:
        if last is not None and t < last:
            offset += last  # a resumed session counts from 0 again
        elapsed.append(offset + t)
        last = t
    data["run_time_s"] = elapsed
    return data


def shard_names(night):
    """The shard names of a merged night: shards.json's order where it names them, else the folders' sorted."""
    listing = os.path.join(night, "shards.json")
    try:
        with open(listing, encoding="utf-8") as f:
            doc = json.load(f)
    except (OSError, ValueError) as e:
        raise InputError(f"{listing}: cannot be read as JSON ({e})") from None
    if isinstance(doc, dict):
        doc = doc.get("shards", [])
    names = []
    for entry in doc if isinstance(doc, list) else []:
        if isinstance(entry, dict):
            entry = entry.get("name") or os.path.basename(os.path.normpath(str(entry.get("dir") or entry.get("path") or "")))
        if isinstance(entry, str) and entry and os.path.isdir(os.path.join(night, "shards", entry)):
            names.append(entry)
    if not names:
        folder = os.path.join(night, "shards")
        names = sorted(e for e in os.listdir(folder) if os.path.isdir(os.path.join(folder, e))) \
            if os.path.isdir(folder) else []
    if not names:
        raise InputError(f"{night}: shards.json names no shard under {os.path.join(night, 'shards')}")
    return names


def load_series(out):
    """[(label, data)]: one per shard of a merged night (a shard without rows yet is left out, with a note),
    else the campaign's own plot_data labelled ''."""
    if not os.path.isfile(os.path.join(out, "shards.json")):
        return [("", read_plot_data(os.path.join(out, "plot_data")))]
    series, skipped = [], []
    for name in shard_names(out):
        try:
            series.append((name, read_plot_data(os.path.join(out, "shards", name, "plot_data"))))
        except InputError as e:
            skipped.append(str(e))
    if not series:
        raise InputError(f"{out}: no shard has plot data: " + "; ".join(skipped))
    for why in skipped:
        print(f"tcfuzz plot: left out: {why}", file=sys.stderr)
    return series


def panel_lines(label, data, column):
    """[(legend label, values)] of one source in one panel: the column itself, then any gpu<N>_<column>."""
    gpus = sorted((int(m.group(1)), name) for name in data
                  if (m := PER_GPU.match(name)) and m.group(2) == column)
    if not gpus:
        return [(label, data[column])]
    lines = [((label + " " if label else "") + "all", data[column])]
    lines += [((label + " " if label else "") + f"gpu{n}", data[name]) for n, name in gpus]
    return lines


def time_unit(seconds):
    if seconds >= 7200:
        return 3600.0, "run time (hours)"
    if seconds >= 120:
        return 60.0, "run time (minutes)"
    return 1.0, "run time (seconds)"


def draw(out, dest):
    series = load_series(out)
    try:
        import matplotlib
    except ImportError:
        print(f"tcfuzz plot: matplotlib is not installed in {sys.executable}: run scripts/setup", file=sys.stderr)
        return 3
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from matplotlib.ticker import MaxNLocator
    matplotlib.rcdefaults()  # a user's matplotlibrc does not change the figure
    matplotlib.rcParams.update({
        "svg.hashsalt": "tcfuzz-plot",  # stable ids in the SVG
        "svg.fonttype": "none",  # text stays text (searchable; titles and legends readable in the file)
        "font.family": "DejaVu Sans",  # shipped with matplotlib: the same glyphs on every machine
        "font.size": 9,
        "path.simplify": False,
    })
    divisor, xlabel = time_unit(max(max(d["run_time_s"]) for _, d in series))
    fig, axes = plt.subplots(3, 2, figsize=(12, 10), dpi=100, layout="constrained")
    name = os.path.basename(os.path.normpath(os.path.abspath(out)))
    kind = f"merged night, {len(series)} shards" if series[0][0] else "campaign"
    fig.suptitle(f"tcfuzz {kind}: {name}", fontsize=12)
    for ax, (column, title, ylabel) in zip(axes.flat, PANELS):
        count = 0
        for label, data in series:
            xs = [t / divisor for t in data["run_time_s"]]
            for line_label, ys in panel_lines(label, data, column):
                ax.plot(xs, ys, label=line_label or None, linewidth=1.3, marker="." if len(xs) < 30 else None)
                count += 1
        ax.set_title(title)
        ax.set_xlabel(xlabel)
        ax.set_ylabel(ylabel)
        ax.set_xlim(left=0)
        ax.set_ylim(bottom=0)
        ax.grid(True, alpha=0.3)
        if column != "programs_per_min":
            ax.yaxis.set_major_locator(MaxNLocator(integer=True))  # counts
        if count > 1:
            ax.legend(fontsize=7, ncol=max(1, (count + 7) // 8), loc="best")
    os.makedirs(dest, exist_ok=True)
    for ext, metadata in (("png", {"Software": "tcfuzz plot"}), ("svg", {"Date": None, "Creator": "tcfuzz plot"})):
        final = os.path.join(dest, f"campaign.{ext}")
        partial = final + ".partial"
        fig.savefig(partial, format=ext, metadata=metadata)
        os.replace(partial, final)  # a reader never sees half a figure
    plt.close(fig)
    print(os.path.join(dest, "campaign.png"))
    print(os.path.join(dest, "campaign.svg"))
    return 0


def main(argv):
    if len(argv) != 3:
        print("usage: plot_campaign.py OUT DEST", file=sys.stderr)
        return 2
    try:
        return draw(argv[1], argv[2])
    except InputError as e:
        print(f"tcfuzz plot: {e}", file=sys.stderr)
        return 2
    except Exception as e:  # no traceback dump: one line naming what failed
        print(f"tcfuzz plot: drawing failed: {type(e).__name__}: {e}", file=sys.stderr)
        return 3


if __name__ == "__main__":
    sys.exit(main(sys.argv))
