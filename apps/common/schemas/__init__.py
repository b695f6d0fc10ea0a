"""Pure helpers on tool schemas and arguments that the catalog (which declares and checks
them) and the gateway's pipeline (which applies them to a call) both need: patterns matched
by RE2 (`patterns.py`), the normalizers a version may declare (`normalizers.py`), and
optional nulls (`nulls.py`). No ORM, no settings, no app imports.
"""
