"""ER-Audit Studio core library: import, score, audit, store, report. Never imports streamlit."""

__version__ = "0.1.0"
