"""Pages nested deeper than the HTML parser reads by default. Pure: mutates the tree it is given.

libxml2 reads an HTML page only down to 256 open elements and drops the rest of the page at that
point. Browsers read on. Old pages reach that depth with an unclosed ``<font>`` or ``<b>`` per
line, and a hostile page reaches it with an article wrapped in hundreds of ``<div>``s: the text
below the limit was lost, and a page whose whole article lay there failed as "no readable text
(it may be rendered by JavaScript)".

Such a page is parsed again with libxml2's huge-tree option (open elements up to 2,048; beyond
that the page is still cut, and the document returned then ends with :data:`CUT_NOTE`, so that
no one takes the text above the cut for the whole page) and then flattened to :data:`MAX_DEPTH`,
because the reader view and the markdown renderer read a tree by recursion:

1. wrappers that carry nothing (a ``div``, ``span``, ``font``, ``center`` or ``section`` whose
   only content is one element, and a layout table of one row of one cell, which becomes its
   cell) are unwrapped, so an article inside a tower of ``<div>``s or of layout tables keeps its
   paragraphs, lists and links;
2. whatever still lies deeper than :data:`MAX_DEPTH` becomes the plain text of its ancestor at
   that depth, blocks kept apart by line breaks (formatting and links that deep are lost, the
   words are not). An ancestor that is part of a table's frame (a ``table``, ``tbody`` or ``tr``,
   whose own text neither the reader view nor the renderer reads) passes the text up to the
   nearest ancestor that holds text, the cell around it.

A page that parses within the limit is never touched.
"""

from __future__ import annotations

from lxml import etree

from markfetch.markdown import BLOCKS

# Below libxml2's own limit, so that a flattened page also survives being parsed again (the
# second opinion re-reads Readability's summary, which wraps the article in two more elements),
# and well within Python's recursion limit for the renderer (about two frames per level).
MAX_DEPTH = 200
HUGE_DEPTH = 2048  # libxml2's limit with the huge-tree option: a page nested deeper is cut there
# What a page cut there is told: the error when nothing readable lies above the cut
# (:func:`markfetch.extract.extract_article`), else this note after the document's text.
TOO_DEEP = f"the page nests its elements more than {HUGE_DEPTH:,} deep, deeper than markfetch reads"
CUT_NOTE = f"(markfetch: {TOO_DEEP}; it is cut at that depth, and the rest of the page is missing)"
_TRANSPARENT = ("div", "span", "font", "center", "section")
# A table's frame: the text of these is not read, only that of their cells (and captions).
_TABLE_FRAME = frozenset({"table", "thead", "tbody", "tfoot", "tr", "colgroup"})
_ROW_GROUPS = ("thead", "tbody", "tfoot")
# What a layout table's frame may carry and still be unwrapped: presentation only. A class, id,
# style or hidden on the table or its row is read by the preparation (hidden elements, furniture,
# the main region), so such a table stays (its text is still kept, by step 2).
_LAYOUT_ATTRIBUTES = frozenset(
    {"width", "height", "border", "cellpadding", "cellspacing", "align", "valign", "bgcolor", "background"}
)


def flatten(root: etree._Element, max_depth: int = MAX_DEPTH) -> None:
    """Bring every element of ``root`` to at most ``max_depth`` levels below it (see the module)."""
    if _deepest(root) <= max_depth:
        return
    for table in list(root.iter("table")):
        cell = _only_cell(table)
        if cell is not None and table.getparent() is not None:
            _unwrap_table(table, cell)
    for wrapper in [element for element in root.iter(_TRANSPARENT) if _carries_nothing(element)]:
        _unwrap(wrapper)
    for element in _at_depth(root, max_depth):
        if len(element):
            element.text = _flat_text(element)
            for child in list(element):
                element.remove(child)


def _deepest(root: etree._Element) -> int:
    depth = deepest = 0
    for event, _ in etree.iterwalk(root, events=("start", "end")):
        depth += 1 if event == "start" else -1
        deepest = max(deepest, depth)
    return deepest - 1  # the root is level 0


def _at_depth(root: etree._Element, depth: int) -> list[etree._Element]:
    """The elements ``depth`` levels below ``root``, in document order; for one that is part of a
    table's frame, its nearest ancestor that is not (whose text is read), once, and nothing
    inside that ancestor besides (its text goes with it). One walk, linear in the page."""
    found: list[etree._Element] = []
    path: list[etree._Element] = []  # the walk's open elements, root first: path[level]
    covered: int | None = None  # the level of the ancestor found last, while the walk is inside it
    walk = etree.iterwalk(root, events=("start", "end"))
    for event, element in walk:
        if event == "end":  # also comes for the elements whose subtree was skipped
            if covered == len(path) - 1:
                covered = None
            path.pop()
            continue
        path.append(element)
        level = len(path) - 1
        if covered is not None:
            walk.skip_subtree()
        elif level == depth:
            while level > 0 and path[level].tag in _TABLE_FRAME:
                level -= 1
            found.append(path[level])
            covered = level
            walk.skip_subtree()
    return found


def _only_cell(table: etree._Element) -> etree._Element | None:
    """The cell of a table that is one row of one cell and nothing else (no caption, no text
    outside the cell, only presentational attributes on the table and its row), else None: such a
    table lays its content out, it tabulates nothing."""
    frame = [table]
    rows = _children(table)
    if len(rows) == 1 and rows[0].tag in _ROW_GROUPS:
        frame.append(rows[0])
        rows = _children(rows[0])
    if len(rows) != 1 or rows[0].tag != "tr":
        return None
    frame.append(rows[0])
    cells = _children(rows[0])
    if len(cells) != 1 or cells[0].tag not in ("td", "th"):
        return None
    if any((part.text or "").strip() or not _LAYOUT_ATTRIBUTES.issuperset(part.attrib) for part in frame):
        return None
    return cells[0]


def _children(element: etree._Element) -> list[etree._Element]:
    """The element children of ``element``, or [] when text or a comment stands between them."""
    children = []
    for child in element:
        if not isinstance(child.tag, str) or (child.tail or "").strip():
            return []
        children.append(child)
    return children


def _unwrap_table(table: etree._Element, cell: etree._Element) -> None:
    """Put ``cell``, as a ``div`` (its attributes kept), where ``table`` stood."""
    parent = table.getparent()
    assert parent is not None  # flatten checked it
    cell.tag = "div"
    cell.tail = table.tail
    parent.replace(table, cell)


def _carries_nothing(element: etree._Element) -> bool:
    if len(element) != 1 or (element.text or "").strip() or element.getparent() is None:
        return False
    child = element[0]
    return isinstance(child.tag, str) and not (child.tail or "").strip()


def _unwrap(wrapper: etree._Element) -> None:
    parent, child = wrapper.getparent(), wrapper[0]
    assert parent is not None  # _carries_nothing checked it
    child.tail = (child.tail or "") + (wrapper.tail or "")
    parent.replace(wrapper, child)


def _flat_text(element: etree._Element) -> str:
    """The text of ``element`` and everything in it, each block on its own line."""
    parts: list[str] = [element.text or ""]
    for event, node in etree.iterwalk(element, events=("start", "end")):
        if node is element or not isinstance(node.tag, str):
            continue
        if event == "start":
            parts.append("\n" if node.tag in BLOCKS or node.tag == "br" else "")
            parts.append(node.text or "")
        else:
            parts.append("\n" if node.tag in BLOCKS else "")
            parts.append(node.tail or "")
    return "".join(parts)
