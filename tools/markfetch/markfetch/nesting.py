"""Pages nested deeper than the HTML parser reads by default. Pure: mutates the tree it is given.

libxml2 reads an HTML page only down to 256 open elements and drops the rest of the page at that
point. Browsers read on. Old pages reach that depth with an unclosed ``<font>`` or ``<b>`` per
line, and a hostile page reaches it with an article wrapped in hundreds of ``<div>``s: the text
below the limit was lost, and a page whose whole article lay there failed as "no readable text
(it may be rendered by JavaScript)".

Such a page is parsed again with libxml2's huge-tree option (open elements up to 2,048; beyond
that the page is still cut) and then flattened to :data:`MAX_DEPTH`, because the reader view and
the markdown renderer read a tree by recursion:

1. wrappers that carry nothing (a ``div``, ``span``, ``font``, ``center`` or ``section`` whose
   only content is one element) are unwrapped, so an article inside a tower of ``<div>``s keeps
   its paragraphs, lists and links;
2. whatever still lies deeper than :data:`MAX_DEPTH` becomes the plain text of its ancestor at
   that depth, blocks kept apart by line breaks (formatting and links that deep are lost, the
   words are not).

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
_TRANSPARENT = ("div", "span", "font", "center", "section")


def flatten(root: etree._Element, max_depth: int = MAX_DEPTH) -> None:
    """Bring every element of ``root`` to at most ``max_depth`` levels below it (see the module)."""
    if _deepest(root) <= max_depth:
        return
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
    found, level = [], -1
    walk = etree.iterwalk(root, events=("start", "end"))
    for event, element in walk:
        if event == "end":
            level -= 1
            continue
        level += 1
        if level == depth:
            found.append(element)
            walk.skip_subtree()  # its end event still comes
    return found


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
