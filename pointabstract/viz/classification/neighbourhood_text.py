"""The words around the neighbourhood figure: its caption and the report.md section.

The verdict is read off the numbers, never tuned: a block groups *by parts beyond proximity*
only if its feature-space neighbours share the query's part more often than its 3D neighbours.
"""

from __future__ import annotations

__all__ = ["agreement_markdown", "figure_caption", "verdict"]

MARGIN = 0.01  # feature - xyz agreement needed to say a block groups by parts beyond proximity


def verdict(entry: dict) -> str:
    """One sentence on one block's ``{"feature", "xyz", "chance"}`` agreement."""
    f, x, c = entry["feature"], entry["xyz"], entry["chance"]
    if f > x + MARGIN:
        return (f"feature-space neighbourhoods follow parts more than 3D balls do ({f:.2f} vs {x:.2f}; "
                f"chance {c:.2f})")
    return (f"the model does NOT group by parts beyond 3D proximity here: feature-space neighbours "
            f"share the query's part no more often than 3D neighbours ({f:.2f} vs {x:.2f}; "
            f"chance {c:.2f})")


def figure_caption(agreement: dict | None, block: int) -> str:
    """The figure's caption: the shown block's agreement numbers and the verdict."""
    if not agreement:
        return ""
    entry = agreement.get(f"block_{block}")
    if entry is None:
        return ""
    return (f"Part agreement of block {block} ({entry['points']} points, K = {entry['k']}, "
            f"{agreement['shapes']} test shapes of {agreement['num_points']} points): share of a query's "
            f"K nearest neighbours in its part: feature space {entry['feature']:.3f}, 3D space "
            f"{entry['xyz']:.3f}, chance {entry['chance']:.3f}. Verdict: {verdict(entry)}.")


def _table(agreement: dict) -> list[str]:
    rows = ["| block | points | K | feature space | 3D space | chance | feature - 3D |",
            "|---|---:|---:|---:|---:|---:|---:|"]
    for key in sorted((k for k in agreement if k.startswith("block_")), key=lambda k: int(k.split("_")[1])):
        e = agreement[key]
        rows.append(f"| {key.split('_')[1]} | {e['points']} | {e['k']} | {e['feature']:.3f} | "
                    f"{e['xyz']:.3f} | {e['chance']:.3f} | {e['feature'] - e['xyz']:+.3f} |")
    return rows


def agreement_markdown(png_name: str, metrics: dict, block: int, caption: str) -> str:
    """The report.md section: heading, figure, what it shows, and the agreement tables."""
    lines = ["## What the model groups together", "",
             f"![feature-space vs 3D-space neighbourhoods]({png_name})", "",
             "Each pair of panels: a query point (blue) and its K nearest neighbours (red) among one block's "
             "points, in that block's feature space (left) and in 3D space (right); the input cloud is drawn "
             "faintly, coloured by part when the data has part labels. Queries are the points whose two "
             "neighbourhoods overlap least (panel titles: neighbours shared by both, and neighbours in the "
             "query's part), so the figure shows where the spaces differ most, not a typical point; the "
             "numbers below are over all points. Feature-space neighbourhoods that follow the parts of the "
             "shape, rather than balls, are what the Centroid Transformers paper's Fig. 4 shows.", ""]
    if not metrics:
        return "\n".join(lines + [f"_{caption}_", ""])
    main, train = metrics["part_agreement"], metrics.get("part_agreement_training_points")
    lines += [f"**Part agreement** (share of a point's K nearest neighbours that lie in its part, mean over "
              f"the points of a block, then over {main['shapes']} test shapes; block points take the part of "
              f"their nearest input point; chance = all other points of the block). "
              f"At {main['num_points']} input points (the figure):", ""] + _table(main) + [""]
    if train is not None:
        lines += [f"At the {train['num_points']} input points the model was trained with:", ""]
        lines += _table(train) + [""]
    entry = main.get(f"block_{block}")
    if entry is not None:
        lines += [f"Block {block} (shown): {verdict(entry)}.", ""]
    return "\n".join(lines)
