"""The server face: REST, WebSocket events, Prometheus metrics and the dashboard, in one app."""
