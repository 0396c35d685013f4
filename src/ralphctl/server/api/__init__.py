"""The REST routes, one module per resource; every route requires the bearer token."""
