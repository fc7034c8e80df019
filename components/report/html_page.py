"""Every HTML page adrank writes (the run report, the replay's day series, the promotion step's page) is a jinja2
template under `components/report/templates/`, each extending the one page wrapper `page.html.j2`; a section that
appears on two pages (the promotion) is one template both include.

Autoescaping is on for every template: a value reaches the page escaped unless it is `Markup`, which only HTML
that escaped its own text is (`trusted_html`: e.g. `components.display_tables.html_table`).
"""

from __future__ import annotations

from typing import Any

import jinja2
from markupsafe import Markup

_TEMPLATES = jinja2.Environment(
    loader=jinja2.PackageLoader("components.report", "templates"),
    autoescape=True,
    undefined=jinja2.StrictUndefined,  # a name the renderer forgot fails, it does not render as nothing
    trim_blocks=True,
    keep_trailing_newline=True,
)


def render_page(template: str, **context: Any) -> str:
    """`template` (a file name under templates/) rendered with `context`."""
    return _TEMPLATES.get_template(template).render(**context)


def trusted_html(text: str) -> Markup:
    """HTML that a renderer built and escaped itself (a table from `html_table`): placed as it is, not escaped again."""
    return Markup(text)
