"""Trained models on your own files: ``pointabstract.load(checkpoint).predict(x)`` and
``pointabstract predict`` (docs/predict.md).

- :mod:`.loading`: a checkpoint rebuilt without its dataset; :mod:`.inputs`: paths and arrays
  as clouds; :mod:`.prepare`: N points and the unit-sphere frame, as training fed them;
- :mod:`.classify`, :mod:`.reconstruct`, :mod:`.segment`: one task each; :mod:`.results`: what
  they return; :mod:`.predictor`: the :class:`Predictor` tying them together;
- :mod:`.writers`: the files ``pointabstract predict`` writes; :mod:`.cli`: the command.
"""

from .loading import Trained, load_trained
from .predictor import Predictor, load
from .prepare import Prepared, minimum_points
from .results import ClassPrediction, PartPrediction, Reconstruction

__all__ = ["ClassPrediction", "PartPrediction", "Predictor", "Prepared", "Reconstruction", "Trained", "load",
           "load_trained", "minimum_points"]
