"""The staff's HTML pages from the templates in grader/report/templates/: every value escaped, every name required.

The templates hold the markup; the modules that call `render` hand them plain data (text and numbers, never
markup). jinja2 is imported on the first page written, so that no learner's command pays for it.
"""

from __future__ import annotations

import functools
import html
from typing import TYPE_CHECKING

from grader.inert import inert

if TYPE_CHECKING:
    import jinja2
    import markupsafe

TEMPLATES = "templates"  # a folder of grader/report, shipped as package data (pyproject.toml)


def as_text(value: object) -> markupsafe.Markup:
    """What a template prints for `value`: markup a template made (a macro's output) as it is; anything else as
    text, made inert (grader/inert.py: controls and bidi characters visible) and escaped, quotes included, in
    html.escape's spelling (&quot;, &#x27;) that the pages have always had."""
    from markupsafe import Markup

    if isinstance(value, Markup):
        return value
    return Markup(html.escape(inert(str(value)), quote=True))


@functools.cache
def environment() -> jinja2.Environment:
    """The templates' one environment, made on first use: autoescape on, a name no one passed an error (not an
    empty string), and block tags on their own lines leaving no line behind, so that a template can be read."""
    import jinja2

    return jinja2.Environment(loader=jinja2.PackageLoader("grader.report", TEMPLATES), autoescape=True,
                              undefined=jinja2.StrictUndefined, finalize=as_text, trim_blocks=True,
                              lstrip_blocks=True, keep_trailing_newline=True)


def render(template: str, **data: object) -> str:
    """The page `template` (a file name in TEMPLATES) filled in with `data`; jinja2.UndefinedError names what
    the template uses and `data` lacks."""
    return environment().get_template(template).render(**data)
