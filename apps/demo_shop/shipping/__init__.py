"""The demo shipping service, an MCP server for ToolHub to govern (server.py); run it with
`python -m apps.demo_shop.shipping --port N`."""
