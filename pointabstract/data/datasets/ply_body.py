"""The body of a PLY file, vectorised: the vertex columns and the face lists (:mod:`.ply`).

ASCII: the body's tokens are found in one compiled pass (:func:`.text_kernels.tokenize`); each
non-empty line is one row of the elements in header order; the vertex rows are parsed as one
table and the face rows walked property by property for all rows at once. Binary: rows of scalar
properties, or of lists that all have the first row's lengths, are viewed in place
(``np.frombuffer``); rows whose list lengths differ are located by one compiled walk
(:func:`.binary_kernels.list_rows`) and their lists gathered in one indexing step.

Polygons are returned flat, ``(sizes (P,), indices (sum(sizes),))`` int64.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

__all__ = ["ascii_body", "binary_body"]


def ascii_body(path: Path, buf: np.ndarray, body: int, elements: list, wanted) -> tuple:
    """(vertex table (V, P) float64 in property order, polygons or None) of an ascii body."""
    from .text_kernels import token_floats, tokenize

    tokens = tokenize(buf, body)
    first_line = int(np.count_nonzero(buf[:body] == 10)) + 1  # line number of the body's line 0
    new = np.ones(len(tokens.line), bool)
    new[1:] = tokens.line[1:] != tokens.line[:-1]
    row_start = np.append(np.flatnonzero(new), len(tokens.line))  # token index of each row
    vertex = elements[0]
    width = len(vertex.props)
    rows = len(row_start) - 1
    lengths = np.diff(row_start[:vertex.count + 1])
    if rows < vertex.count or (lengths != width).any():
        bad = np.flatnonzero(lengths != width)
        where = f":{first_line + tokens.line[row_start[bad[0]]]}" if len(bad) else ""
        got = f"a row of {lengths[bad[0]]}" if len(bad) else f"{rows} rows"
        raise ValueError(f"{path}{where}: truncated or malformed: expected {vertex.count} rows of {width} "
                         f"values, got {got}")

    def where(k):
        text = bytes(buf[tokens.starts[k]:tokens.ends[k]])[:40]
        return f"{path}:{first_line + tokens.line[k]}: not a number: {text!r}"

    table = token_floats(buf, tokens, slice(0, row_start[vertex.count]), where=where).reshape(-1, width)
    if wanted is None:
        return table, None
    first_row = vertex.count + sum(e.count for e in elements[1:elements.index(wanted)])
    if rows < first_row + wanted.count:
        raise ValueError(f"{path}: truncated: {wanted.count} faces announced, {max(rows - first_row, 0)} "
                         "rows left")
    starts = row_start[first_row:first_row + wanted.count + 1]
    values = token_floats(buf, tokens, slice(starts[0], starts[-1]), where=where)
    return table, _walk_ascii(path, values, starts - starts[0], wanted, tokens.line[starts[:-1]] + first_line)


def _walk_ascii(path: Path, values: np.ndarray, starts: np.ndarray, element, lines: np.ndarray) -> tuple:
    """The wanted face lists of ascii rows ``values[starts[r]:starts[r + 1]]``."""
    from .ply import face_list

    wanted, cursor, ends = face_list(path, element), starts[:-1].copy(), starts[1:]
    bad = np.zeros(len(cursor), bool)
    found = None
    for name, _, count_type in element.props:
        if count_type is None:
            cursor = cursor + 1
            continue
        inside = cursor < ends
        n = np.where(inside, values[np.minimum(cursor, len(values) - 1)], -1)
        bad |= ~inside | ~(n >= 0) | (n != np.round(n)) | (n > len(values))
        n = np.where(bad, 0, n).astype(np.int64)
        if name == wanted:
            found = (n, cursor + 1)
        cursor = cursor + 1 + n
    bad |= cursor != ends
    if bad.any():
        row = int(np.flatnonzero(bad)[0])
        raise ValueError(f"{path}:{lines[row]}: face {row}: bad row (its lists do not match the "
                         f"{element.name} properties)")
    from .polygons import gather_lists

    sizes, first = found
    flat = values[gather_lists(first, sizes)]
    if not np.isfinite(flat).all() or (flat != np.round(flat)).any():
        raise ValueError(f"{path}: a face index is not a whole number")
    return sizes, flat.astype(np.int64)


def binary_body(path: Path, buf: np.ndarray, body: int, elements: list, wanted, order: str) -> tuple:
    """(vertex rows (a structured array), polygons or None) of a binary body."""
    rows, offset = _scalar_rows(path, buf, body, elements[0], order)
    polygons = None
    for element in elements[1: elements.index(wanted) + 1] if wanted is not None else []:
        offset, lists = _element(path, buf, offset, element, order, want=element is wanted)
        polygons = lists if element is wanted else polygons
    return rows, polygons


def _scalar_rows(path: Path, buf: np.ndarray, offset: int, element, order: str):
    dtype = np.dtype([(name, order + t) for name, t, _ in element.props])
    need = dtype.itemsize * element.count
    if len(buf) - offset < need:
        noun = "vertices" if element.name == "vertex" else f"{element.name} rows"
        raise ValueError(f"{path}: truncated: {element.count} {noun} need {need} bytes, the file has "
                         f"{len(buf) - offset}")
    return np.frombuffer(buf, dtype=dtype, count=element.count, offset=offset), offset + need


def _uniform(buf: np.ndarray, offset: int, element, order: str, *, want: bool):
    """(offset after, face lists) when every row has the first row's list lengths, else None.

    The rows are viewed at a fixed stride; if every list length read at those places equals the
    first row's, each row does start there (by induction from row 0), so the view is exact."""
    fields, at = [], offset
    for name, t, count in element.props:
        if count is None:
            fields.append((name, order + t))
            at += np.dtype(t).itemsize
            continue
        if element.count == 0 or at + np.dtype(count).itemsize > len(buf):
            return None
        n = int(buf[at:at + np.dtype(count).itemsize].view(order + count)[0])
        if n < 0:
            return None
        fields += [(f"{name}#", order + count), (name, order + t, (n,))]
        at += np.dtype(count).itemsize + n * np.dtype(t).itemsize
    dtype = np.dtype(fields)
    if len(buf) - offset < dtype.itemsize * element.count:
        return None
    rows = np.frombuffer(buf, dtype=dtype, count=element.count, offset=offset)
    counts = [rows[f"{name}#"] for name, _, c in element.props if c is not None]
    if not all((n == n[0]).all() for n in counts):
        return None
    end = offset + dtype.itemsize * element.count
    if not want:
        return end, None
    from .ply import face_list

    name = face_list(None, element)
    table = rows[name].reshape(element.count, -1).astype(np.int64)
    return end, (np.full(element.count, table.shape[1], np.int64), table.ravel())


def _element(path: Path, buf: np.ndarray, offset: int, element, order: str, *, want: bool):
    """(offset after the element, its face lists when ``want``)."""
    if all(count is None for _, _, count in element.props):
        return _scalar_rows(path, buf, offset, element, order)[1], None
    uniform = _uniform(buf, offset, element, order, want=want)
    if uniform is not None:
        return uniform
    from .binary_kernels import list_rows
    from .ply import face_list

    props = [(np.dtype(count or t).itemsize, 0 if count is None else np.dtype(t).itemsize,
              count is not None and np.dtype(count).kind == "i") for _, t, count in element.props]
    if any(count is not None and np.dtype(count).kind not in "iu" for _, _, count in element.props):
        raise ValueError(f"{path}: the {element.name} element has a list whose length type is not an integer")
    least = element.count * sum(size for size, _, _ in props)  # every row holds its scalars and counts
    if least > len(buf) - offset:
        raise ValueError(f"{path}: truncated: {element.count} {element.name} rows need at least {least} "
                         f"bytes, the file has {len(buf) - offset}")
    starts, lengths, bad = list_rows(buf, offset, element.count, props, big=order == ">")
    if bad >= 0:
        raise ValueError(f"{path}: truncated in element {element.name!r} (row {bad} of {element.count} "
                         f"runs past the {len(buf)} bytes of the file, or has a negative list length)")
    if not want:
        return int(starts[-1]), None
    wanted, cursor, j = face_list(path, element), starts[:-1].copy(), 0
    for (name, t, count), (size, item, _) in zip(element.props, props):
        if count is None:
            cursor = cursor + size
            continue
        if name == wanted:
            sizes, data, item_type = lengths[:, j], cursor + size, t
        cursor = cursor + size + lengths[:, j] * item
        j += 1
    from .binary_kernels import list_items

    kind = np.dtype(item_type)
    if kind.kind not in "iu":
        raise ValueError(f"{path}: the face list {wanted!r} holds {kind.name} values, not vertex indices")
    flat = list_items(buf, data, sizes, kind.itemsize, signed=kind.kind == "i", big=order == ">")
    return int(starts[-1]), (sizes, flat)
