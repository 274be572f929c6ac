"""Part-segmentation checkpoints: true vs predicted parts and the tree's levels as clusters.

:mod:`.session` (checkpoint -> sample, tree clusters), :mod:`.scenes` (the panels),
:mod:`.figures` (the figure and eval report section), :mod:`.app` (the viewer state, keys and
its ``--png`` writer).
"""
