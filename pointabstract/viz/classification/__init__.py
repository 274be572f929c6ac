"""Classification checkpoints: a query point's K nearest neighbours in a block's feature space
next to its K nearest neighbours in 3D space (Centroid Transformers Fig. 4).

:mod:`.session` (checkpoint -> model, split, one sample's per-block features), :mod:`.scenes`
(the panels), :mod:`.figures` (the multi-panel figure and eval report section), :mod:`.app`
(the viewer state and keys); :mod:`.part_agreement` (how often feature-space vs 3D neighbours
share a point's part: the figure's numbers) and :mod:`.neighbourhood_text` (its caption).
"""
