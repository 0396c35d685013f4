"""The body of fresh-context loops: wires agents, store and brain together."""
