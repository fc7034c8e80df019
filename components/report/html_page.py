"""The one HTML page every adrank report is (the benchmark report, the replay's day series): a UTF-8 document with
its title and style, and sections added at its end later (the promotion section of a local run)."""

from __future__ import annotations

import html

PAGE_END = "</body></html>\n"


def html_page(title: str, style: str, body: str) -> str:
    """A whole document: `title` (escaped here), `style` (CSS) and `body` (HTML)."""
    return (f"<!DOCTYPE html><html><head><meta charset='utf-8'><title>{html.escape(title)}</title>"
            f"<style>{style}</style></head><body>{body}{PAGE_END}")


def with_section_at_end(page: str, section: str, marker: str) -> str:
    """`page` with `section` (which starts with `marker`) just before its end, replacing a section added before."""
    if not section.startswith(marker):
        raise ValueError("a replaceable section starts with its marker")
    if marker in page:
        page = page[:page.index(marker)] + PAGE_END
    return page.replace(PAGE_END, section + PAGE_END, 1)
