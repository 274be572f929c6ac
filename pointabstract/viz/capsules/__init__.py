"""Capsule-autoencoder checkpoints (task ``reconstruction``): the input next to its
reconstruction, the points each latent capsule decodes, the Fig. 5 figure.

:mod:`.session` (checkpoint -> input, reconstruction, capsules), :mod:`.scenes` (the panels),
:mod:`.figures` (the figure and eval report section), :mod:`.app` (the viewer state and keys).
"""
