"""``pointabstract.load(checkpoint)``: a trained model used on your own files and arrays.

A :class:`Predictor` needs no dataset on disk: the class names, the part categories, N and the
model's config come from the checkpoint (:mod:`.loading`). ``predict`` reads and prepares each
input (:mod:`.prepare`: N points, the frame), runs the task (:mod:`.classify`,
:mod:`.reconstruct`, :mod:`.segment`) and returns the results of :mod:`.results` with every
point in the input's own coordinates.
"""

from __future__ import annotations

from pathlib import Path

import torch

from .. import _validate as V
from ..data.categories import CATEGORY_BY_SYNSET, SHAPENET_PART, resolve_category
from .classify import classify
from .inputs import as_clouds, is_batch
from .loading import Trained, load_trained
from .prepare import NORMALIZE, UP_ROTATIONS, Prepared, minimum_points, prepare, training_frame
from .reconstruct import reconstruct
from .segment import segment

__all__ = ["OPTIONS", "Predictor", "load"]

# option -> the tasks it applies to (any other task's predictor refuses it, naming it)
OPTIONS = {"top_k": ("classification",), "votes": ("classification", "part_segmentation"),
           "category": ("part_segmentation",), "per_capsule": ("reconstruction",)}


def load(checkpoint: str | Path, device: str | torch.device = "cpu") -> Predictor:
    """The :class:`Predictor` of a trained checkpoint (``last.pt`` / ``best.pt``) or of a folder
    written by :meth:`Predictor.save_pretrained` / ``pointabstract export``.

    Raises:
        FileNotFoundError: no such checkpoint. ValueError: not a usable checkpoint (one line).
    """
    return Predictor(load_trained(checkpoint, device=device))


class Predictor:
    """A trained classifier, autoencoder or part segmenter applied to files and arrays.

    Attributes:
        task: ``"classification"``, ``"reconstruction"`` or ``"part_segmentation"``.
        num_points: N, the points the model sees per input (the run's ``data.num_points``); None
            for a run trained with ``data.num_points=all``: every input at its own size.
        min_points: the fewest points an input cloud may have (:func:`.prepare.minimum_points`).
        class_names: classification: the run's classes (logit order); else [].
        categories: part segmentation: the ShapeNetPart categories it was trained on; else [].
        frame: ``"unit_sphere"`` or ``"none"``: how inputs are brought into the frame the model
            was trained in (:func:`.prepare.training_frame`).
        trained: the model, task, config and checkpoint (:class:`.loading.Trained`).
    """

    def __init__(self, trained: Trained, *, batch_size: int | None = None):
        self.trained = trained
        self.task = trained.config.task
        n = trained.config.data.num_points
        self.num_points = None if n == "all" else int(n)
        self.min_points = minimum_points(self.num_points)
        self.class_names = list(trained.names) if self.task == "classification" else []
        self.categories = list(trained.names) if self.task == "part_segmentation" else []
        self.batch_size = batch_size or int(trained.config.data.eval_batch_size)
        self.frame = training_frame(trained.config)

    @classmethod
    def from_pretrained(cls, folder: str | Path, device: str | torch.device = "cpu") -> Predictor:
        """The predictor of a folder written by :meth:`save_pretrained` (or of a checkpoint)."""
        return cls(load_trained(folder, device=device))

    def save_pretrained(self, folder: str | Path, *, overwrite: bool = False) -> Path:
        """Write ``folder/config.json`` + ``folder/model.safetensors``
        (:meth:`.loading.Trained.save_pretrained`)."""
        return self.trained.save_pretrained(folder, overwrite=overwrite)

    def __repr__(self) -> str:
        return (f"Predictor({self.trained.config.model!r}, task={self.task!r}, N={self.num_points}, "
                f"checkpoint={str(self.trained.path)!r})")

    def predict(self, x, *, top_k: int | None = None, votes: int | None = None, category=None,
                normalize: str | None = None, up: str = "y"):
        """Predict on ``x``: a path (file, folder or glob), an (N, 3|6) or (B, N, 3|6) array (NumPy
        or torch; columns x y z [nx ny nz]), or a list of paths / clouds of different sizes.

        Args:
            top_k: classification: classes returned per input (default 5).
            votes: classification / part segmentation: test-time copies averaged, as ``eval``
                (default: the run's ``task.votes``).
            category: part segmentation: the ShapeNetPart category (name, synset or index) of every
                input, or a list of one per input; default: the synset folder a file lies in (a
                ShapeNetPart layout).
            normalize: None (default): the frame the model was trained in
                (:func:`~.prepare.training_frame`, :attr:`frame`); ``"unit_sphere"``: centre and
                scale each input into the unit sphere; ``"none"`` (classification and part
                segmentation): the points as given, as ``eval`` feeds a dataset sample.
            up: the inputs' up axis: ``"y"`` (default, as the built-in data) or ``"z"`` (e.g.
                ModelNet's OFF meshes, scans): turned to y up for the model, outputs turned back.

        Returns:
            One :class:`~.results.ClassPrediction`, :class:`~.results.Reconstruction` or
            :class:`~.results.PartPrediction` for a single file or (N, C) array; a list of them,
            in input order, for a list, a batch, a folder or a glob.

        Raises:
            ValueError / TypeError / OSError: one line naming the input (unreadable, too few points,
            no normals, a missing or unknown category) or the option that does not apply.
        """
        self.check_options(top_k=top_k, votes=votes, category=category)
        prepared = self.prepare(x, normalize=normalize, up=up)
        results = self.run(prepared, top_k=top_k, votes=votes, category=category)
        return results if is_batch(x) else results[0]

    def prepare(self, x, *, normalize: str | None = None, up: str = "y") -> list[Prepared]:
        """Every input of ``x`` (as :meth:`predict` takes it) read and prepared for the model."""
        transform = self._transform(normalize)
        V.check_choice("up", up, UP_ROTATIONS, note=" (the input's up axis)")
        cfg = self.trained.config
        return [prepare(c, num_points=self.num_points, use_normals=cfg.data.use_normals, transform=transform,
                        seed=cfg.seed, up=up) for c in as_clouds(x)]

    def run(self, prepared: list[Prepared], *, top_k: int | None = None, votes: int | None = None,
            category=None) -> list:
        """The task's results for inputs already prepared (:meth:`prepare`), in order."""
        self.check_options(top_k=top_k, votes=votes, category=category)
        votes = self._votes(votes)
        if self.task == "classification":
            return classify(self.trained, prepared, top_k=5 if top_k is None else top_k, votes=votes,
                            batch_size=self.batch_size)
        if self.task == "reconstruction":
            return reconstruct(self.trained, prepared, batch_size=self.batch_size)
        each = self._each(category, prepared)
        ids = [self.category_of(p.cloud.path, p.cloud.name, c) for p, c in zip(prepared, each)]
        return segment(self.trained, prepared, ids, votes=votes, batch_size=self.batch_size)

    def check_options(self, *, flags: bool = False, **given) -> None:
        """ValueError naming an option given (not None / False) that this checkpoint's task does not
        take (:data:`OPTIONS`), a count below 1, or a category the model does not know; with
        ``flags`` the options are named as on the command line (``--top-k``)."""
        def shown(name: str) -> str:
            return f"--{name.replace('_', '-')}" if flags else name

        for name, value in given.items():
            if value is not None and value is not False and self.task not in OPTIONS[name]:
                tasks = " and ".join(OPTIONS[name])
                raise ValueError(f"{shown(name)} applies to {tasks} checkpoints; {self.trained.path} is a "
                                 f"'{self.task}' model")
        for name in ("top_k", "votes"):
            if given.get(name) is not None:
                V.check_int(shown(name), given[name], low=1)
        category = given.get("category")
        for value in category if isinstance(category, (list, tuple)) else [category]:
            if value is not None:  # checked before any file is read
                self.category_of(None, "category", value)

    def category_of(self, path: Path | None, name: str, category=None) -> int:
        """The ShapeNetPart category index of one input: ``category`` when given, else the synset
        folder ``path`` lies in; ValueError listing the model's categories otherwise."""
        valid = self.categories
        if category is not None:
            try:
                index = resolve_category(category)
            except ValueError:
                raise ValueError(f"unknown category {category!r}; this model knows {valid}") from None
        else:
            folders = path.resolve().parts if path is not None else ()
            synsets = [part for part in folders if part in CATEGORY_BY_SYNSET]
            if not synsets:
                raise ValueError(f"{name}: a part-segmentation model needs the shape's category: give "
                                 f"category= (--category) one of {valid}, or a file in a ShapeNetPart "
                                 "synset folder")
            index = resolve_category(synsets[-1])
        if SHAPENET_PART[index].name not in valid:
            raise ValueError(f"category {SHAPENET_PART[index].name!r} was not trained by this model; it "
                             f"knows {valid}")
        return index

    @staticmethod
    def _each(category, prepared: list) -> list:
        """``category`` for every input: one value for all, or a list of one per input."""
        if not isinstance(category, (list, tuple)):
            return [category] * len(prepared)
        if len(category) != len(prepared):
            raise ValueError(f"category holds {len(category)} values for {len(prepared)} inputs: give one "
                             "category for all, or one per input")
        return list(category)

    def _votes(self, votes: int | None) -> int:
        if votes is not None:
            return votes
        settings = self.trained.config.task_config()
        return int(getattr(settings, "votes", 1))

    def _transform(self, normalize: str | None):
        normalize = self.frame if normalize is None else normalize
        V.check_choice("normalize", normalize, NORMALIZE)
        if self.task == "reconstruction":
            if normalize != "unit_sphere":
                raise ValueError("normalize='none' does not apply to reconstruction: its training normalises "
                                 "every cloud into the unit sphere")
            return self.trained.task.transform(False)
        from ..data import NormalizeUnitSphere

        return NormalizeUnitSphere() if normalize == "unit_sphere" else None
