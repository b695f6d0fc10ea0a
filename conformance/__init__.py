"""`make conformance`: ToolHub's OpenAPI import and http executor measured against real API
documents (docs/conformance.md).

Every document of a folder is imported with ToolHub's own import, arguments are generated
for every imported tool from its stored parameters schema, and each tool is called through
REST invoke against a loopback upstream that validates every request it receives against
the original document. Unit tests use small fixtures of our own; this run is the check that
the rules they pin add up to calls real APIs accept.
"""
