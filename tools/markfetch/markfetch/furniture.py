"""Blocks of the site, not of the article, that the reader view kept: known by their words. Pure.

The reader view keeps a line of footer links when it sits inside the article's container ("Privacy
Policy | Cookie Notice | Terms of Use"). Such a block is recognised by what its links say, not
by where it stands, so it goes wherever it is (the trailing cuts in :mod:`markfetch.extract` only
look at the end).
"""

from __future__ import annotations

import re

from lxml import etree

# Links that name a site's legal and housekeeping pages. A block that is nothing but such links
# ("Privacy Policy | Cookie Notice | Terms of Use") is the site's, not the article's, wherever the
# reader view kept it. Chosen on the dev parts (`docab webextract --split dev`): on the
# web-content-extraction pages it lowered the must-not rate 0.0400 -> 0.0373 (F1 0.7684 ->
# 0.7685); the article-extraction pages have no such block left (0.9859 either way).
_SITE_LINK = re.compile(
    r"(privacy( policy| notice| statement| settings| choices)?|your privacy choices|"
    r"cookies?( policy| notice| settings| preferences)?|manage cookies|"
    r"terms( of (use|service))?|terms (and|&) conditions|legal( notice)?|imprint|impressum|"
    r"accessibility( statement)?|site ?map|contact( us)?|about( us)?|careers|"
    r"advertise( with us)?|do not sell( or share)? my personal information|disclaimer)",
    re.IGNORECASE,
)
_LINK_SEPARATORS = re.compile(r"[\s|•·,\-–—/]+")


def drop_site_link_lines(container: etree._Element) -> None:
    """Remove from ``container`` (the element whose children are the article's blocks) the blocks
    that hold only links to the site's legal and housekeeping pages."""
    for block in [
        child for child in container if isinstance(child.tag, str) and child.tag in _LINK_LINE_TAGS
    ]:
        names = [" ".join("".join(link.itertext()).split()) for link in block.iter("a")]
        if not names or not all(_SITE_LINK.fullmatch(name) for name in names):
            continue
        rest = " ".join("".join(block.itertext()).split())
        for name in names:
            rest = rest.replace(name, "", 1)
        if not _LINK_SEPARATORS.sub("", rest):  # nothing but the links and their separators
            container.remove(block)


_LINK_LINE_TAGS = frozenset({"p", "ul", "ol", "div"})
