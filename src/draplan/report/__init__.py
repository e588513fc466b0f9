"""Tables, documents and the self-contained HTML report (charts as inline SVG, matplotlib)."""

from draplan.report.html import html_report
from draplan.report.info import ReportInfo
from draplan.report.markdown import markdown_summary

__all__ = ["ReportInfo", "html_report", "markdown_summary"]
