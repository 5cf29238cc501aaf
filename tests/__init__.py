"""The test suite, a package so that tests import their helpers by name (`tests._synthetic`)
and the library, the dashboard's `ui` and `pages` from the repository root that pytest puts
first on the import path for a package rooted there."""
