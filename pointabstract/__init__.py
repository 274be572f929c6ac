"""pointabstract: point-cloud abstractions (centroid attention, capsules, tree attention)."""

__version__ = "0.1.0"
