"""Tables, documents and the self-contained HTML report (inline SVG, no plotting library)."""

from draplan.report.html import html_report
from draplan.report.markdown import markdown_summary

__all__ = ["html_report", "markdown_summary"]
