"""The HTML side of `present`: the standalone report, its tables, the first screen, a run's
verdict in words, CSV/Parquet export with provenance, and the Jinja2 templates (autoescaped)
that the report and the dashboard's HTML fragments render from.

Callers use the names `eraudit_core.present` exports; this package keeps the templates and
the modules that render them together.
"""
