"""A read-only web dashboard of experiments: ``nasx serve EXP [EXP ...]``.

Served by the standard library's ``http.server`` (a handful of GET routes need no framework,
and nothing is installed or downloaded); the page's script, styles and charts ship in the
package. See :mod:`nasx.dashboard.server` for what is served and how it stays safe.
"""
