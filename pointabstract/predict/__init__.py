"""Trained models on your own files: ``pointabstract.load(checkpoint).predict(x)`` and
``pointabstract predict`` (docs/predict.md).

- :mod:`.loading`: a checkpoint rebuilt without its dataset; :mod:`.inputs`: paths and arrays
  as clouds; :mod:`.prepare`: N points and the unit-sphere frame, as training fed them;
- :mod:`.classify`, :mod:`.reconstruct`, :mod:`.segment`: one task each; :mod:`.results`: what
  they return; :mod:`.predictor`: the :class:`Predictor` tying them together;
- :mod:`.writers`: the files ``pointabstract predict`` writes; :mod:`.cli`: the command.

Names are loaded on first use, so building the command line (which imports :mod:`.cli`) needs
neither torch's engine nor its optional dependencies.
"""

from .._lazy import lazy_exports

_EXPORTS = {
    "Trained": "loading", "load_trained": "loading", "Predictor": "predictor", "load": "predictor",
    "Prepared": "prepare", "minimum_points": "prepare", "ClassPrediction": "results",
    "PartPrediction": "results", "Reconstruction": "results",
}
__all__ = sorted(_EXPORTS)


__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS, globals())
